// Which chat an event belongs to: the session's own, or one of its subagents', learned from
// subagent_start (the child's session id) — a child's events carry its own sessionId and are
// drawn nested under the task call that started it. No `vscode` import.

import type { AgentEvent, SessionEntry, SubagentEntry, Usage } from "./protocol";

export interface Child {
  toolCallId: string;
  sessionId: string;
  parentSessionId: string;
  description?: string;
  status: string; // running, completed, failed, aborted
}

export class SubagentRouter {
  readonly children = new Map<string, Child>();

  // The event's place: "child" for a known subagent's session, else "main". A stored one is finished: its status is kept.
  route(sessionId: string, event: AgentEvent | StoredSubagent): "main" | "child" {
    if (this.children.has(sessionId)) return "child";
    if (event.type === "subagent_start")
      this.children.set(event.sessionId, { toolCallId: event.toolCallId, sessionId: event.sessionId, parentSessionId: sessionId,
                                           description: "description" in event ? event.description : undefined,
                                           status: "status" in event ? event.status : "running" });
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

// A finished subagent as a chat draws it (a subagent_start with its status and what it used).
export interface StoredSubagent {
  type: "subagent_start";
  toolCallId: string;
  sessionId: string;
  status: SubagentEntry["status"];
  usage?: Usage | null;
}

export function isStored(event: AgentEvent | StoredSubagent): event is StoredSubagent {
  return event.type === "subagent_start" && "status" in event;
}

// A resumed session's finished subagents, from its `subagent` entries (the whole file's), with what each used.
export function storedSubagents(entries: SessionEntry[]): StoredSubagent[] {
  return entries.filter((e): e is SubagentEntry => e.type === "subagent")
    .map((e) => ({ type: "subagent_start", toolCallId: e.toolCallId, sessionId: e.sessionId, status: e.status, usage: e.usage }));
}

// A subagent's events among a chat's transcript (where they are kept as {child, event}).
export function childEvents(transcript: ({ child: string; event: AgentEvent } | object)[], sessionId: string): AgentEvent[] {
  return transcript.flatMap((e) => ("child" in e && e.child === sessionId ? [e.event] : []));
}
