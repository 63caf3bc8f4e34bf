// Which chat an event belongs to: the session's own, or one of its subagents', learned from
// subagent_start (the child's session id) — a child's events carry its own sessionId and are
// drawn nested under the task call that started it. No `vscode` import.

import type { Json } from "./rpcClient";
import type { SubagentEntry, Usage } from "./protocol";

export interface Child {
  toolCallId: string;
  sessionId: string;
  parentSessionId: string;
  description?: string;
  status: string; // running, completed, failed, aborted
}

export class SubagentRouter {
  readonly children = new Map<string, Child>();

  // The event's place: "child" for a known subagent's session, else "main".
  route(sessionId: string, event: Json): "main" | "child" {
    if (this.children.has(sessionId)) return "child";
    if (event.type === "subagent_start")
      this.children.set(event.sessionId, { toolCallId: event.toolCallId, sessionId: event.sessionId,
                                           parentSessionId: sessionId, description: event.description, status: "running" });
    else if (event.type === "subagent_end") {
      const child = this.children.get(event.sessionId);
      if (child) child.status = event.status;
    }
    return "main";
  }

  running(): Child[] {
    return [...this.children.values()].filter((c) => c.status === "running");
  }

  clear(): void {
    this.children.clear();
  }
}

// A resumed session's finished subagents, from its `subagent` entries (the whole file's), with what each used.
export function storedSubagents(entries: { type: string }[]):
    { toolCallId: string; sessionId: string; status: string; usage?: Usage | null }[] {
  return entries.filter((e): e is SubagentEntry => e.type === "subagent")
    .map((e) => ({ toolCallId: e.toolCallId, sessionId: e.sessionId, status: e.status, usage: e.usage }));
}
