// What a tool call will do, as a user reads it: the command, the file and its content or
// diff. Shared by the chat view and the permission prompt.

import type { JsonObject } from "./protocol";

// `given`: the tool's arguments as the model wrote them, any JSON.
export function describeCall(name: string, given: unknown): string {
  if (!given || typeof given !== "object") return String(given ?? "");
  const args = given as JsonObject;
  if (name === "bash") return `$ ${args.command ?? ""}`;
  if (name === "write") return `${args.path}\n${args.content ?? ""}`;
  if (name === "edit" && Array.isArray(args.edits)) {
    const hunks = args.edits.map((e: JsonObject) => [
      ...String(e.oldText ?? "").split("\n").map((l) => `- ${l}`),
      ...String(e.newText ?? "").split("\n").map((l) => `+ ${l}`),
    ].join("\n"));
    return [`${args.path}`, ...hunks].join("\n");
  }
  return JSON.stringify(args, null, 2);
}
