// Which chat an event belongs to: the session's own, or one of its subagents', learned from
// subagent_start (the child's session id) — a child's events carry its own sessionId and are
// drawn nested under the task call that started it. No `vscode` import.

import type { Json } from "./rpcClient";

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

// A resumed session's finished subagents, from its `subagent` entries (the whole file's).
export function storedSubagents(entries: Json[]): { toolCallId: string; sessionId: string; status: string }[] {
  return entries.filter((e) => e.type === "subagent")
    .map((e) => ({ toolCallId: e.toolCallId, sessionId: e.sessionId, status: e.status }));
}

// A session's conversation as Markdown, for reading (a subagent's, opened from its task call).
export function sessionMarkdown(title: string, entries: Json[]): string {
  const out = [`# ${title}`, ""];
  const text = (content: Json) => typeof content === "string" ? content
    : (content ?? []).filter((b: Json) => b.type === "text").map((b: Json) => b.text).join("");
  for (const entry of entries) {
    const m = entry.type === "message" ? entry.message : undefined;
    if (!m) continue;
    if (m.role === "user") out.push("## Prompt", "", text(m.content), "");
    else if (m.role === "assistant") {
      for (const b of m.content ?? []) {
        if (b.type === "text" && b.text) out.push(b.text, "");
        else if (b.type === "toolCall") out.push(`**${b.name}** \`${JSON.stringify(b.arguments).slice(0, 200)}\``, "");
      }
      if (m.stopReason === "error") out.push(`_error: ${m.errorMessage ?? "the request failed"}_`, "");
      if (m.stopReason === "aborted") out.push("_stopped_", "");
    } else if (m.role === "toolResult") {
      const result = text(m.content);
      const shown = result.length > 2000 ? result.slice(0, 2000) + "\n…" : result;
      out.push(`${m.isError ? "Error from" : "Output of"} ${m.toolName}:`, "", "```", shown.replace(/```/g, "'''"), "```", "");
    }
  }
  return out.join("\n");
}
