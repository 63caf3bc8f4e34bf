// Subagents in the chat: each child session the `task` tool starts is drawn inside that task
// call, as a conversation of its own (its live text, its tool calls) under a head with its
// status and two actions, Stop (abort that child only) and Open (its whole session).

import { Transcript, element } from "./render";

type Json = any;

export interface SubagentInfo {
  toolCallId: string;
  sessionId: string; // the child's
  description?: string;
  status?: string; // running, completed, failed, aborted
}

interface Child {
  box: HTMLElement;
  transcript: Transcript;
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
                element("span", "sub-status", status));
    if (status === "running") head.append(this.button("stop", "Stop", "Stop this subagent", info.sessionId));
    head.append(this.button("open", "Open", "Open the subagent's session", info.sessionId));
    const body = element("div", "sub-body");
    box.append(head, body);
    tool.insertBefore(box, tool.querySelector(":scope > .output"));
    this.children.set(info.sessionId, { box, transcript: new Transcript(body) });
  }

  private button(action: string, label: string, tip: string, sessionId: string): HTMLElement {
    const button = element("button", `sub-${action}`, label);
    button.title = tip;
    button.dataset.action = action;
    button.dataset.sessionId = sessionId;
    return button;
  }

  // An event of a child session.
  event(sessionId: string, event: Json): void {
    this.children.get(sessionId)?.transcript.apply(event);
  }

  end(event: { sessionId: string; status: string }): void {
    const child = this.children.get(event.sessionId);
    if (!child) return;
    child.box.className = `subagent ${event.status}`;
    child.box.querySelector(".sub-status")!.textContent = event.status;
    child.box.querySelector(".sub-stop")?.remove();
  }
}
