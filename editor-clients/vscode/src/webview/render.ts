// A conversation drawn from the agent's events, one change at a time: a delta touches only its
// own block, so an opened <details> stays open while an answer streams. Answers are Markdown
// (raw HTML off) with a copy button on code. The chat has one for its session, and each
// subagent one of its own, nested under the task call that started it.

import MarkdownIt from "markdown-it";
import { describeCall } from "../describe";
import { highlight } from "./highlight";
import { diffPath } from "../editDiff";
import { compactedSummary, compactionEnded, compactionStarted } from "./compaction";
import type { AgentEvent, AgentMessage, AssistantContent, AssistantMessageDelta, AutoRetryStart, BashDetails, JsonObject, UnknownMessage,
              UserContent } from "../protocol";

type KnownMessage = Exclude<AgentMessage, UnknownMessage>; // the roles drawn; another is only a summary line, if it has one
type Content = string | (UserContent | AssistantContent)[] | undefined;


const md = new MarkdownIt({ html: false, linkify: true, highlight });
md.linkify.set({ fuzzyLink: false }); // "core.py" is a file name, not http://core.py (links need a scheme or www.)
const fence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, idx, options, env, self) =>
  `<div class="code"><button class="copy" title="Copy to the clipboard">Copy</button>${fence(tokens, idx, options, env, self)}</div>`;

export function element(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

export function textOf(content: Content): string {
  if (typeof content === "string") return content;
  return (content ?? []).map((b) => b.type === "text" ? b.text ?? "" : "").join("");
}

// What the chat does to rendered text after Markdown: the workspace's file names made links.
let linkFiles: (block: HTMLElement) => void = () => undefined;
export function setFileLinker(link: (block: HTMLElement) => void): void {
  linkFiles = link;
}

function renderMarkdown(block: HTMLElement): void {
  block.innerHTML = md.render(block.dataset.raw ?? "");
  linkFiles(block);
}

// An edit's change as a card under its call: the file, lines added and removed, the unified diff
// in colour, and "Open diff" (the extension opens it in an editor).
export function diffCard(toolCallId: string, diff: string): HTMLElement {
  const card = element("div", "diff-card");
  card.dataset.toolCallId = toolCallId;
  card.dataset.diff = diff; // whole, with the file names: the extension finds the file by them
  const lines = diff.split("\n");
  const path = diffPath(diff) ?? "";
  const added = lines.filter((l) => l.startsWith("+") && !l.startsWith("+++")).length;
  const removed = lines.filter((l) => l.startsWith("-") && !l.startsWith("---")).length;
  const head = element("div", "diff-head");
  const open = element("button", "open-diff", "Open diff");
  open.title = "Show this change in an editor";
  head.append(element("span", "diff-path", path), element("span", "added", `+${added}`),
              element("span", "removed", `−${removed}`), open);
  const pre = element("pre", "");
  const code = element("code", "language-diff");
  const body = lines.filter((l) => !l.startsWith("--- ") && !l.startsWith("+++ ")).join("\n").trimEnd();
  code.innerHTML = highlight(body, "diff") || "";
  if (!code.innerHTML) code.textContent = body;
  pre.append(code);
  card.append(head, pre);
  return card;
}

// Text blocks whose Markdown is redrawn on the next frame, inside `changing` (which keeps the
// view at the bottom when it was there).
const pending = new Set<HTMLElement>();
let changing: (change: () => void) => void = (change) => change();
export function setChanging(wrap: (change: () => void) => void): void {
  changing = wrap;
}

function redrawSoon(block: HTMLElement): void {
  if (pending.size === 0) requestAnimationFrame(() => changing(() => {
    for (const b of pending) renderMarkdown(b);
    pending.clear();
  }));
  pending.add(block);
}

export function textBlock(text: string): HTMLElement {
  const block = element("div", "text");
  block.dataset.raw = text;
  renderMarkdown(block);
  return block;
}

function thinkingBlock(text: string): HTMLElement {
  const block = element("details", "thinking");
  block.append(element("summary", "", "thinking"), element("div", "body", text));
  return block;
}

// An update_plan call's gist: how many steps are done, and the one in progress.
function planGist(plan: unknown): string | undefined {
  if (!Array.isArray(plan)) return undefined;
  const steps = plan as { step?: unknown; status?: unknown }[];
  const now = steps.find((s) => s.status === "in_progress")?.step;
  return `${steps.filter((s) => s.status === "completed").length}/${steps.length} done${typeof now === "string" ? ` · ${now}` : ""}`;
}

// A tool's one-line title: its name and the start of what it does (the command, the path, a task's description,
// a question, a plan's progress); how it ended when not well (stopped, rejected by the user, an error).
function title(name: string, args: Record<string, unknown> | undefined, isError?: boolean, ended?: "stopped" | "rejected"): string {
  const what = String((name === "bash" ? args?.command : name === "update_plan" ? planGist(args?.plan)
                       : args?.path ?? args?.pattern ?? args?.query ?? args?.description ?? args?.question) ?? "").split("\n")[0];
  const short = what.length > 60 ? `${what.slice(0, 59)}…` : what;
  const background = name === "bash" && args?.background === true ? " (in the background)" : "";
  return `${name}${short ? ` ${short}` : ""}${background}${ended ? ` (${ended})` : isError ? " (error)" : ""}`;
}

// The daemon's results of a call the user refused (guard/permissions.py: a plain no, a reason, a rule, Reject and stop).
const REJECTED = /^the user (declined|rejected|has declined)\b/i;
const EDITED = /^The user edited this call before it ran; what ran: (.*)$/m; // its first line (guard/permissions.py what_ran)

// The files saved before a bash call ran (its details, BashDetails.savedFiles).
const savedFiles = (details: unknown) => (details as Partial<BashDetails> | undefined)?.savedFiles;

const CONTEXT_MARK = "\n\n[editor context]\n"; // how the daemon renders prompt context after the text
const STOPPED = "[stopped by the user]"; // the daemon's last line of a call Stop cut short

// The images sent with a prompt, as thumbnails.
function images(content: Content): HTMLElement[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((b) => b.type === "image" && b.data ? [b] : []).map((b) => {
    const img = document.createElement("img");
    img.className = "thumb";
    img.src = `data:${b.mimeType};base64,${b.data}`;
    img.alt = "image sent with the prompt";
    return img;
  });
}

// A user message; the editor context the daemon rendered after it (files, selections) is
// folded under the names of its items. `dataset.text` keeps what the user typed.
function userMessage(text: string, content?: Content): HTMLElement {
  const node = element("div", "m user");
  const pictures = images(content);
  if (pictures.length) node.append(element("div", "images"));
  node.querySelector(".images")?.append(...pictures);
  const at = text.indexOf(CONTEXT_MARK);
  node.dataset.text = at < 0 ? text : text.slice(0, at);
  if (at < 0) {
    node.append(element("div", "said", text));
    return node;
  }
  const block = text.slice(at + CONTEXT_MARK.length);
  const names = block.split("\n").map((line) => /^(\S.*?)(?: lines? \d+(?:-\d+)?)?:$/.exec(line)?.[1])
    .filter((name): name is string => Boolean(name));
  const details = element("details", "context");
  details.append(element("summary", "", `context: ${names.join(", ")}`), element("pre", "", block));
  node.append(element("div", "said", text.slice(0, at)), details);
  return node;
}

interface Message {
  node: HTMLElement;
  blocks: HTMLElement[];
}

export interface TranscriptOptions {
  // A stored user message (it has its entry now): the chat adds its "Rewind to here".
  onUserStored?: (node: HTMLElement, entryId: string) => void;
  onBackground?: (block: HTMLElement, processId: string) => void; // a bash call started a background process
}

export class Transcript {
  private current?: Message; // the assistant message being streamed
  private lastUser?: HTMLElement;
  readonly tools = new Map<string, HTMLElement>(); // toolCallId -> its <details>

  constructor(readonly root: HTMLElement, private readonly options: TranscriptOptions = {}) {}

  clear(): void {
    this.root.replaceChildren();
    this.tools.clear();
    this.current = undefined;
    this.lastUser = undefined;
  }

  // A tool call's <details>: its summary, args and output are its own children (a task call
  // holds a subagent's conversation too, with tool calls of its own).
  toolBlock(id: string, name: string, args?: JsonObject): HTMLElement {
    let block = this.tools.get(id);
    if (!block) {
      block = element("details", "tool");
      block.dataset.id = id;
      block.dataset.name = name;
      block.append(element("summary", "", name), element("pre", "args"), element("pre", "output"));
      this.tools.set(id, block);
    }
    if (args !== undefined) {
      block.querySelector(":scope > .args")!.textContent = describeCall(name, args);
      block.dataset.args = JSON.stringify(args);
      block.querySelector(":scope > summary")!.textContent = title(name, args, block.classList.contains("failed"));
    }
    return block;
  }

  // A call the user changed in the permission request before it ran: the block shows the call that
  // ran (the daemon sent its start again with the edited arguments), said so in its title.
  private edited(block: HTMLElement): void {
    block.classList.add("edited");
    if (block.nextElementSibling?.classList.contains("edited-note")) return;
    const what = block.dataset.name === "bash" ? "command" : "call";
    block.after(element("div", "note edited-note", `✎ You edited this ${what} before it ran: above is what ran.`));
  }

  // A call Stop cut short keeps the output it had streamed, its result ending in STOPPED.
  private setOutput(id: string, name: string, text: string, isError?: boolean, done = true): void {
    const block = this.toolBlock(id, name);
    block.querySelector(":scope > .output")!.textContent = text;
    const ran = EDITED.exec(text); // a stored call the user edited (a replay sends no second start): what ran
    if (ran) {
      try {
        this.toolBlock(id, name, JSON.parse(ran[1]));
      } catch { /* the arguments were cut short in the result: the call stays as the model wrote it */ }
      this.edited(block);
    }
    const stopped = Boolean(isError) && text.trimEnd().endsWith(STOPPED);
    const rejected = Boolean(isError) && REJECTED.test(text.trim());
    block.classList.toggle("running", !done);
    block.classList.toggle("failed", Boolean(isError));
    block.classList.toggle("stopped", stopped);
    block.classList.toggle("rejected", rejected);
    const args = block.dataset.args ? JSON.parse(block.dataset.args) : undefined;
    block.querySelector(":scope > summary")!.textContent = title(block.dataset.name ?? name, args, isError,
                                                                   stopped ? "stopped" : rejected ? "rejected" : undefined);
    if (done && (block.dataset.name ?? name) === "ask_user") this.showAnswer(block, text);
  }

  // Under an edit: its change, in colour.
  private showDiff(id: string, details: unknown): void {
    const diff = (details as { diff?: unknown } | undefined)?.diff;
    if (typeof diff !== "string" || !diff) return;
    const block = this.toolBlock(id, "edit");
    if (block.nextElementSibling?.classList.contains("diff-card")) return;
    block.after(diffCard(id, diff));
  }

  // Under a question the user answered (ask_user): the answer, in sight without opening the call.
  private showAnswer(block: HTMLElement, text: string): void {
    let line = block.nextElementSibling as HTMLElement | null;
    if (!line?.classList.contains("answer-note")) block.after(line = element("div", "note answer-note"));
    line.textContent = `↳ ${text.trim()}`;
  }

  // Under a bash call: the files saved for it to see the agent's edits (details.savedFiles).
  private showSaved(id: string, files?: string[]): void {
    if (!files?.length) return;
    const block = this.toolBlock(id, "bash");
    if (block.nextElementSibling?.classList.contains("saved")) return;
    block.after(element("div", "note saved", `Saved ${files.join(", ")} before running`));
  }

  // Under a bash call that started a background process (its details' processId): the process's line.
  private showBackground(id: string, details: unknown): void {
    const processId = (details as { processId?: unknown } | undefined)?.processId;
    if (typeof processId === "string") this.options.onBackground?.(this.toolBlock(id, "bash"), processId);
  }

  private blockFor(b: AssistantContent): HTMLElement {
    if (b.type === "thinking") return thinkingBlock(b.thinking ?? "");
    if (b.type === "toolCall") return this.toolBlock(b.id, b.name, b.arguments);
    return textBlock(b.text ?? "");
  }

  // A finished message brings its final content: blocks shown live are brought in step,
  // missing ones (a replay) are created.
  private reconcile(message: Message, content: AssistantContent[]): void {
    content.forEach((b, i) => {
      const shown = message.blocks[i];
      if (!shown) {
        message.blocks[i] = this.blockFor(b);
        message.node.append(message.blocks[i]);
      } else if (b.type === "text" && (shown.dataset.raw !== b.text || pending.has(shown))) {
        shown.dataset.raw = b.text ?? "";
        pending.delete(shown); // a finished message is drawn whole now, not on a frame a hidden view may not get
        renderMarkdown(shown);
      } else if (b.type === "thinking") shown.querySelector(".body")!.textContent = b.thinking ?? "";
      else if (b.type === "toolCall") this.toolBlock(b.id, b.name, b.arguments);
    });
  }

  private messageStart(message: AgentMessage): void {
    const m = message as KnownMessage;
    if (m.role === "user") {
      this.lastUser = userMessage(textOf(m.content), m.content);
      this.root.append(this.lastUser);
    } else if (m.role === "assistant") {
      this.root.querySelectorAll(".retry").forEach((n) => n.remove()); // the next attempt is here
      this.current = { node: element("div", "m assistant"), blocks: [] };
      this.root.append(this.current.node);
      if (Array.isArray(m.content)) this.reconcile(this.current, m.content);
    } else if (m.role === "toolResult") {
      this.setOutput(m.toolCallId, m.toolName, textOf(m.content), m.isError);
      this.showSaved(m.toolCallId, savedFiles(m.details));
      if (!m.isError) this.showDiff(m.toolCallId, m.details);
      if (!m.isError) this.showBackground(m.toolCallId, m.details);
    } else if (m.role === "bashExecution") {
      this.root.append(element("pre", "m bash", `$ ${m.command}\n${m.output ?? ""}`));
    } else if (m.role === "compactionSummary") {
      this.root.append(compactedSummary(m));
    } else if ("summary" in m && m.summary) {
      this.root.append(element("div", "m summary", m.summary));
    }
  }

  private messageEnd(message: AgentMessage, entryId?: string): void {
    const m = message as KnownMessage;
    if (m.role === "user" && this.lastUser && entryId) {
      this.lastUser.dataset.entryId = entryId;
      this.options.onUserStored?.(this.lastUser, entryId);
    }
    if (m.role === "toolResult" && entryId) this.tools.get(m.toolCallId)?.setAttribute("data-entry-id", entryId);
    const current = this.current;
    if (m.role !== "assistant" || !current) return;
    if (entryId) current.node.dataset.entryId = entryId;
    if (Array.isArray(m.content)) this.reconcile(current, m.content);
    if (m.stopReason === "aborted") current.node.append(element("div", "note", "stopped"));
    else if (m.stopReason === "error") this.failed(current, m.errorMessage ?? "the request failed");
    this.current = undefined;
  }

  // A failed request's error. The same error again from a retry, with nothing said in between,
  // is counted on the first one's line: one line, not one per attempt.
  private failed(current: Message, error: string): void {
    const said = current.blocks.some((b) => (b.dataset.raw ?? b.textContent ?? "").trim() || b.matches("details.tool"));
    let before = current.node.previousElementSibling as HTMLElement | null;
    while (before?.classList.contains("retry")) before = before.previousElementSibling as HTMLElement | null;
    if (!said && before?.classList.contains("failed-only") && before.dataset.error === error) {
      current.node.remove();
      const attempts = Number(before.dataset.attempts ?? "1") + 1;
      before.dataset.attempts = String(attempts);
      before.querySelector(".attempts")!.textContent = ` (${attempts} attempts)`;
      return;
    }
    const line = element("div", "error", error);
    line.append(element("span", "attempts"));
    current.node.append(line);
    if (!said) Object.assign(current.node.dataset, { error, attempts: "1" });
    if (!said) current.node.classList.add("failed-only");
  }

  private retryTimer?: ReturnType<typeof setInterval>;

  // "retrying 2 of 4 in 3 s", counting down, until the next attempt starts (or the run ends).
  private retrying(event: AutoRetryStart): void {
    this.root.querySelectorAll(".retry").forEach((n) => n.remove());
    clearInterval(this.retryTimer);
    const line = element("div", "m note retry");
    this.root.append(line);
    const due = Date.now() + event.delayMs;
    const show = () => {
      const seconds = Math.ceil((due - Date.now()) / 1000);
      line.textContent = `retrying ${event.attempt} of ${event.maxAttempts} ${seconds > 0 ? `in ${seconds} s` : "now"}…`;
      if (seconds <= 0 || !line.isConnected) clearInterval(this.retryTimer);
    };
    show();
    this.retryTimer = setInterval(show, 250);
  }

  private messageUpdate(e: AssistantMessageDelta): void {
    const current = this.current;
    if (!current) return;
    const i = e.contentIndex ?? current.blocks.length;
    const add = (block: HTMLElement) => {
      current.blocks[i] = block;
      current.node.append(block);
    };
    const block = current.blocks[i];
    if (e.type === "text_start") add(textBlock(""));
    else if (e.type === "thinking_start") add(thinkingBlock(""));
    else if (e.type === "toolcall_start") add(this.toolBlock(e.id ?? `pending-${i}`, e.toolName ?? "tool"));
    else if (e.type === "text_delta" && block) {
      block.dataset.raw = (block.dataset.raw ?? "") + e.delta;
      redrawSoon(block);
    } else if (e.type === "thinking_delta" && block) block.querySelector(".body")!.append(e.delta);
    else if (e.type === "toolcall_end") {
      const call = e.toolCall;
      const shown = this.toolBlock(call.id, call.name, call.arguments);
      if (block && block !== shown) block.replaceWith(shown);
      else if (!block) current.node.append(shown);
      current.blocks[i] = shown;
    }
  }

  apply(event: AgentEvent): void {
    switch (event.type) {
      case "message_start": return this.messageStart(event.message);
      case "message_update": return this.messageUpdate(event.assistantMessageEvent);
      case "message_end": return this.messageEnd(event.message, event.entryId);
      case "tool_execution_start": {
        const block = this.toolBlock(event.toolCallId, event.toolName, event.args);
        block.classList.add("running");
        if (event.editedByUser) this.edited(block);
        return;
      }
      case "tool_execution_update":
        this.setOutput(event.toolCallId, event.toolName, textOf(event.partialResult?.content), false, false);
        return this.showSaved(event.toolCallId, savedFiles(event.partialResult?.details));
      case "tool_execution_end":
        this.setOutput(event.toolCallId, event.toolName, textOf(event.result?.content), event.isError);
        if (!event.isError) this.showDiff(event.toolCallId, event.result?.details);
        if (!event.isError) this.showBackground(event.toolCallId, event.result?.details);
        return this.showSaved(event.toolCallId, savedFiles(event.result?.details));
      case "auto_retry_start": return this.retrying(event);
      case "compaction_start": return compactionStarted(this.root, event);
      case "compaction_end": return compactionEnded(this.root, event);
      case "auto_retry_end": this.root.querySelectorAll(".retry").forEach((n) => n.remove()); return;
      case "agent_settled":
        this.root.querySelectorAll(".retry").forEach((n) => n.remove());
        if (event.stopReason === "rejected")
          this.root.append(element("div", "m note run-stopped", "You rejected the call and stopped the run: nothing more was run."));
        return;
    }
  }
}

// Shows where `query` occurs (in the message stored as `entryId` when it is drawn, else anywhere):
// the first occurrence is marked, its folded blocks opened and scrolled into view.
export function reveal(root: HTMLElement, query: string, entryId?: string): HTMLElement | undefined {
  root.querySelectorAll("mark.found").forEach((m) => m.replaceWith(...m.childNodes));
  const scope = (entryId && root.querySelector<HTMLElement>(`[data-entry-id="${CSS.escape(entryId)}"]`)) || root;
  const wanted = query.toLowerCase();
  const walker = document.createTreeWalker(scope, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode() as Text | null; node; node = walker.nextNode() as Text | null) {
    const at = wanted ? (node.data.toLowerCase().indexOf(wanted)) : -1;
    if (at < 0) continue;
    const range = document.createRange();
    range.setStart(node, at);
    range.setEnd(node, at + wanted.length);
    const mark = document.createElement("mark");
    mark.className = "found";
    range.surroundContents(mark);
    for (let up = mark.parentElement; up && up !== root; up = up.parentElement)
      if (up instanceof HTMLDetailsElement) up.open = true;
    mark.scrollIntoView({ block: "center" });
    return mark;
  }
  if (scope !== root) scope.scrollIntoView({ block: "center" });
  return undefined;
}
