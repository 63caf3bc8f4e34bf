// "Rewind to here": what the confirmation shows and where the rewind goes. No `vscode` import:
// tested with node --test against the real daemon. The VS Code side is in sessionActions.ts.

import { isRole } from "./rpcClient";
import type { MessageEntry, RewindResult, SessionEntry, UserContent } from "./protocol";

const CONTEXT_MARK = "\n\n[editor context]\n"; // the editor context the daemon renders after a prompt's text

export interface RewindTarget {
  entryId: string | null; // the entry that becomes the leaf (null: before the first)
  text?: string; // a user message's text, to put back into the input
}

function userText(content: string | UserContent[]): string {
  const text = typeof content === "string" ? content
    : (content ?? []).map((b) => (b.type === "text" ? b.text ?? "" : "")).join("");
  const at = text.indexOf(CONTEXT_MARK);
  return at < 0 ? text : text.slice(0, at);
}

// Rewinding to a user message goes to before it (its parent), like "edit and resend": the
// message leaves the conversation and its text comes back; any other entry becomes the leaf.
export function rewindTarget(entries: SessionEntry[], entryId: string): RewindTarget {
  const entry = entries.find((e) => e.id === entryId);
  if (!entry) throw new Error(`no entry ${entryId} in this session`);
  const said = entry.type === "message" ? entry as MessageEntry : undefined;
  if (said?.message && isRole(said.message, "user")) return { entryId: said.parentId ?? null, text: userText(said.message.content) };
  return { entryId };
}

// "Fork from a message": the session's user messages, each by what the user typed (one sent with
// images, too; "(image)" only when it has no text).
export function forkChoices(entries: SessionEntry[]): { label: string; id: string }[] {
  return entries.flatMap((e) => {
    const said = e.type === "message" ? e as MessageEntry : undefined;
    return said?.message && isRole(said.message, "user")
      ? [{ label: (userText(said.message.content) || "(image)").slice(0, 80), id: said.id }] : [];
  });
}

export type FilesChoice = "revert" | "keep";

const ACTIONS: Record<string, string> = { write: "restored", create: "created again", delete: "deleted" };

// The modal confirmation for a dry run's plan: the files that go back, those left alone, and
// the choices (only the conversation's when no file would change).
export function rewindPrompt(plan: RewindResult, text?: string): {
  message: string; detail: string; choices: { label: string; files: FilesChoice }[];
} {
  const lines: string[] = [];
  if (text !== undefined) lines.push(`"${text.length > 80 ? text.slice(0, 79) + "…" : text}" and everything after it leaves the conversation; its text comes back into the input.`, "");
  if (plan.files.length) {
    lines.push(`Files taken back (${plan.files.length}):`, ...plan.files.map((f) => `• ${f.path} (${ACTIONS[f.action] ?? f.action})`));
  } else lines.push("No file changes.");
  if (plan.conflicts.length)
    lines.push("", `Changed since by someone else, left alone (${plan.conflicts.length}):`,
               ...plan.conflicts.map((c) => `• ${c.path}: ${c.reason}`));
  const choices: { label: string; files: FilesChoice }[] = plan.files.length
    ? [{ label: "Rewind conversation and files", files: "revert" }, { label: "Rewind conversation only", files: "keep" }]
    : [{ label: "Rewind conversation", files: "keep" }];
  return { message: "Rewind to here?", detail: lines.join("\n"), choices };
}

// What to tell after a rewind: the files it left alone (undefined: nothing to tell).
export function rewindReport(result: RewindResult): string | undefined {
  if (!result.conflicts.length) return undefined;
  const names = result.conflicts.map((c) => c.path).join(", ");
  return `pi: rewound, but ${result.conflicts.length === 1 ? "this file was" : "these files were"} changed since and left alone: ${names}`;
}

// The confirmation a Session Tree click asks before moving there (session/navigate, files left as
// they are): nothing moves until the user says so, and the conversation left stays as a branch.
export function goBackPrompt(target: RewindTarget, role: string | undefined, quoted: string): {
  message: string; detail: string; choice: string;
} {
  const short = quoted.replace(/\s+/g, " ").trim();
  const said = `"${short.length > 80 ? short.slice(0, 79) + "…" : short}"`;
  const lines = target.text !== undefined
    ? [`The conversation goes back to just before ${said}; its text comes back into the input to edit and send again.`,
       "That message and everything after it stay in the Session Tree as a branch you can come back to."]
    : [`The conversation goes back to ${role === "summary" ? "this summary" : said}; what came after it stays in the Session Tree as a branch you can come back to.`];
  lines.push("", "Files are not changed (Rewind to Here takes the agent's file changes back too).");
  return { message: "Go back to this message?", detail: lines.join("\n"), choice: "Go back" };
}
