// Subagents in the chat: each child session the `task` tool starts is drawn inside that task
// call, as a conversation of its own (its live text, its tool calls) under a head with its
// status, what it used (tokens, cost), and two actions, Stop (abort that child only) and Open
// (its session as a chat in an editor tab).

import { Transcript, element } from "./render";
import type { AgentEvent, AssistantMessage, SubagentEnd, Usage } from "../protocol";

export interface SubagentInfo {
  toolCallId: string;
  sessionId: string; // the child's
  description?: string;
  status?: string; // running, completed, failed, aborted
  usage?: Usage | null; // a finished one's (from its stored entry)
}

interface Child {
  box: HTMLElement;
  transcript: Transcript;
  tokens: number;
  cost: number;
}

// "1,234 tokens · $0.0123"
export function usageText(tokens: number, cost: number): string {
  return `${tokens.toLocaleString("en-US")} tokens · $${cost.toFixed(4)}`;
}

export class Subagents {
  private children = new Map<string, Child>();

  constructor(private readonly main: Transcript) {}

  clear(): void {
    this.children.clear();
  }

  has(sessionId: string): boolean {
    return this.children.has(sessionId);
  }

  // subagent_start (live), or a child known from the session list (a resumed session: finished).
  start(info: SubagentInfo): void {
    if (this.children.has(info.sessionId)) return;
    const tool = this.main.toolBlock(info.toolCallId, "task") as HTMLDetailsElement;
    tool.classList.add("has-sub");
    const status = info.status ?? "running";
    if (status === "running") tool.open = true; // so its work shows as it streams
    const box = element("div", `subagent ${status}`);
    box.dataset.sessionId = info.sessionId;
    const head = element("div", "sub-head");
    const args = tool.dataset.args ? JSON.parse(tool.dataset.args) : {};
    head.append(element("span", "sub-title", `subagent: ${info.description || args.description || "task"}`),
                element("span", "sub-status", status), element("span", "sub-usage"));
    if (status === "running") head.append(this.button("stop", "Stop", "Stop this subagent", info.sessionId));
    head.append(this.button("open", "Open", "Open the subagent's session", info.sessionId));
    const body = element("div", "sub-body");
    box.append(head, body);
    tool.insertBefore(box, tool.querySelector(":scope > .output"));
    const child = { box, transcript: new Transcript(body), tokens: 0, cost: 0 };
    this.children.set(info.sessionId, child);
    if (info.usage) this.showUsage(child, info.usage.totalTokens, info.usage.cost.total);
  }

  private showUsage(child: Child, tokens: number, cost: number): void {
    Object.assign(child, { tokens, cost });
    const shown = child.box.querySelector(":scope > .sub-head > .sub-usage")!;
    shown.textContent = usageText(tokens, cost);
    shown.setAttribute("title", "What this subagent used (it counts in the session's totals)");
  }

  private button(action: string, label: string, tip: string, sessionId: string): HTMLElement {
    const button = element("button", `sub-${action}`, label);
    button.title = tip;
    button.dataset.action = action;
    button.dataset.sessionId = sessionId;
    return button;
  }

  // An event of a child session.
  // An event of a child session; its answers' usage adds up while it runs.
  event(sessionId: string, event: AgentEvent): void {
    const child = this.children.get(sessionId);
    if (!child) return;
    child.transcript.apply(event);
    const usage = event.type === "message_end" && event.message.role === "assistant" && (event.message as AssistantMessage).usage;
    if (usage) this.showUsage(child, child.tokens + usage.totalTokens, child.cost + usage.cost.total);
  }

  end(event: SubagentEnd): void {
    const child = this.children.get(event.sessionId);
    if (!child) return;
    if (event.usage) this.showUsage(child, event.usage.totalTokens, event.cost ?? event.usage.cost.total);
    child.box.className = `subagent ${event.status}`;
    child.box.querySelector(".sub-status")!.textContent = event.status;
    child.box.querySelector(".sub-stop")?.remove();
  }
}
