// The chat view's script, running inside the webview. It keeps the page in step with the
// agent's events one change at a time — a delta touches only its own block, so an opened
// <details> stays open, the view does not jump and the queue's items stay clickable while an
// answer streams — and renders answers as Markdown (raw HTML off) with a copy button on code.
// Live events and a replayed session go through the same code, so both look the same.

import MarkdownIt from "markdown-it";
import { describeCall } from "../describe";
import { CommandInfo, completeCommand } from "../commands";
import { insertMention, mentionAt, mentionContext, rankFiles } from "../mentions";

type Json = any;
declare function acquireVsCodeApi(): { postMessage(message: unknown): void };

const vscode = acquireVsCodeApi();
const md = new MarkdownIt({ html: false, linkify: true });
const fence = md.renderer.rules.fence!;
md.renderer.rules.fence = (tokens, idx, options, env, self) =>
  `<div class="code"><button class="copy" title="Copy to the clipboard">Copy</button>${fence(tokens, idx, options, env, self)}</div>`;

const $ = (id: string) => document.getElementById(id)!;
const log = $("log");
const queueList = $("queue");
const input = $("input") as HTMLTextAreaElement;
const stop = $("stop") as HTMLButtonElement;
const suggest = $("suggest");

function element(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// --- following the end --------------------------------------------------------------------

// The view follows new text only while the user is at the bottom.
function changing(change: () => void): void {
  const scroller = document.scrollingElement ?? document.body;
  const atBottom = scroller.scrollTop + window.innerHeight >= scroller.scrollHeight - 24;
  change();
  if (atBottom) scroller.scrollTop = scroller.scrollHeight;
}

// --- blocks -----------------------------------------------------------------------------

interface Message {
  node: HTMLElement;
  blocks: HTMLElement[];
}

let current: Message | undefined; // the assistant message being streamed
const tools = new Map<string, HTMLElement>(); // toolCallId -> its <details>
const pending = new Set<HTMLElement>(); // text blocks whose Markdown is redrawn on the next frame

function textOf(content: Json): string {
  if (typeof content === "string") return content;
  return (content ?? []).filter((b: Json) => b.type === "text").map((b: Json) => b.text ?? "").join("");
}

function renderMarkdown(block: HTMLElement): void {
  block.innerHTML = md.render(block.dataset.raw ?? "");
}

function redrawSoon(block: HTMLElement): void {
  if (pending.size === 0) requestAnimationFrame(() => changing(() => {
    for (const b of pending) renderMarkdown(b);
    pending.clear();
  }));
  pending.add(block);
}

function textBlock(text: string): HTMLElement {
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

// A tool's one-line title: its name and the start of what it does (the command, the path).
function title(name: string, args: Json, isError?: boolean): string {
  const what = String((name === "bash" ? args?.command : args?.path ?? args?.pattern ?? args?.query) ?? "").split("\n")[0];
  const short = what.length > 60 ? `${what.slice(0, 59)}…` : what;
  return `${name}${short ? ` ${short}` : ""}${isError ? " (error)" : ""}`;
}

function toolBlock(id: string, name: string, args?: Json): HTMLElement {
  let block = tools.get(id);
  if (!block) {
    block = element("details", "tool");
    block.dataset.id = id;
    block.dataset.name = name;
    block.append(element("summary", "", name), element("pre", "args"), element("pre", "output"));
    tools.set(id, block);
  }
  if (args !== undefined) {
    block.querySelector(".args")!.textContent = describeCall(name, args);
    block.dataset.args = JSON.stringify(args);
    block.querySelector("summary")!.textContent = title(name, args, block.classList.contains("failed"));
  }
  return block;
}

function setOutput(id: string, name: string, text: string, isError?: boolean, done = true): void {
  const block = toolBlock(id, name);
  block.querySelector(".output")!.textContent = text;
  block.classList.toggle("running", !done);
  block.classList.toggle("failed", Boolean(isError));
  const args = block.dataset.args ? JSON.parse(block.dataset.args) : undefined;
  block.querySelector("summary")!.textContent = title(block.dataset.name ?? name, args, isError);
}

function blockFor(b: Json): HTMLElement {
  if (b.type === "thinking") return thinkingBlock(b.thinking ?? "");
  if (b.type === "toolCall") return toolBlock(b.id, b.name, b.arguments);
  return textBlock(b.text ?? "");
}

// A finished message brings its final content: blocks shown live are brought in step,
// missing ones (a replay) are created.
function reconcile(message: Message, content: Json[]): void {
  content.forEach((b, i) => {
    const shown = message.blocks[i];
    if (!shown) {
      message.blocks[i] = blockFor(b);
      message.node.append(message.blocks[i]);
    } else if (b.type === "text" && shown.dataset.raw !== b.text) {
      shown.dataset.raw = b.text ?? "";
      renderMarkdown(shown);
    } else if (b.type === "thinking") shown.querySelector(".body")!.textContent = b.thinking ?? "";
    else if (b.type === "toolCall") toolBlock(b.id, b.name, b.arguments);
  });
}

// --- events -------------------------------------------------------------------------------

const CONTEXT_MARK = "\n\n[editor context]\n"; // how the daemon renders prompt context after the text

// A user message; the editor context the daemon rendered after it (files, selections) is
// folded under the names of its items.
function userMessage(text: string): HTMLElement {
  const node = element("div", "m user");
  const at = text.indexOf(CONTEXT_MARK);
  if (at < 0) {
    node.textContent = text;
    return node;
  }
  const block = text.slice(at + CONTEXT_MARK.length);
  const names = block.split("\n").map((line) => /^(\S.*?)(?: lines? \d+(?:-\d+)?)?:$/.exec(line)?.[1])
    .filter((name): name is string => Boolean(name));
  const details = element("details", "context");
  details.append(element("summary", "", `context: ${names.join(", ")}`), element("pre", "", block));
  node.append(element("div", "", text.slice(0, at)), details);
  return node;
}

function messageStart(m: Json): void {
  if (m.role === "user") {
    log.append(userMessage(textOf(m.content)));
  } else if (m.role === "assistant") {
    current = { node: element("div", "m assistant"), blocks: [] };
    log.append(current.node);
    if (Array.isArray(m.content)) reconcile(current, m.content);
  } else if (m.role === "toolResult") {
    setOutput(m.toolCallId, m.toolName, textOf(m.content), m.isError);
  } else if (m.role === "bashExecution") {
    log.append(element("pre", "m bash", `$ ${m.command}\n${m.output ?? ""}`));
  } else if (m.summary) {
    log.append(element("div", "m summary", m.summary));
  }
}

function messageEnd(m: Json): void {
  if (m.role !== "assistant" || !current) return;
  if (Array.isArray(m.content)) reconcile(current, m.content);
  if (m.stopReason === "aborted") current.node.append(element("div", "note", "stopped"));
  else if (m.stopReason === "error") current.node.append(element("div", "error", m.errorMessage ?? "the request failed"));
  current = undefined;
}

function messageUpdate(e: Json): void {
  if (!current) return;
  const i = e.contentIndex ?? current.blocks.length;
  const add = (block: HTMLElement) => {
    current!.blocks[i] = block;
    current!.node.append(block);
  };
  const block = current.blocks[i];
  if (e.type === "text_start") add(textBlock(""));
  else if (e.type === "thinking_start") add(thinkingBlock(""));
  else if (e.type === "toolcall_start") add(toolBlock(e.id ?? `pending-${i}`, e.toolName ?? "tool"));
  else if (e.type === "text_delta" && block) {
    block.dataset.raw = (block.dataset.raw ?? "") + e.delta;
    redrawSoon(block);
  } else if (e.type === "thinking_delta" && block) block.querySelector(".body")!.append(e.delta);
  else if (e.type === "toolcall_end") {
    const call = e.toolCall;
    const shown = toolBlock(call.id, call.name, call.arguments);
    if (block && block !== shown) block.replaceWith(shown);
    else if (!block) current.node.append(shown);
    current.blocks[i] = shown;
  }
}

function applyEvent(event: Json): void {
  switch (event.type) {
    case "message_start": return messageStart(event.message);
    case "message_update": return messageUpdate(event.assistantMessageEvent);
    case "message_end": return messageEnd(event.message);
    case "tool_execution_start": toolBlock(event.toolCallId, event.toolName, event.args).classList.add("running"); return;
    case "tool_execution_update":
      return setOutput(event.toolCallId, event.toolName, textOf(event.partialResult?.content), false, false);
    case "tool_execution_end":
      return setOutput(event.toolCallId, event.toolName, textOf(event.result?.content), event.isError);
  }
}

// --- the queue and the input --------------------------------------------------------------

let shownQueue = "";

function showQueue(items: { id: string; text: string; kind: string }[]): void {
  const key = JSON.stringify(items);
  if (key === shownQueue) return; // unchanged: the items under the pointer stay the same nodes
  shownQueue = key;
  queueList.replaceChildren(...items.map((q) => {
    const item = element("li", "", `${q.kind === "steer" ? "steer" : "follow-up"}: ${q.text} ✕`);
    item.title = "Click to remove from the queue";
    item.dataset.id = q.id;
    return item;
  }));
}

queueList.addEventListener("click", (e) => {
  const item = (e.target as HTMLElement).closest("li");
  if (item?.dataset.id) vscode.postMessage({ type: "removeQueued", queueId: item.dataset.id });
});

log.addEventListener("click", (e) => {
  const button = (e.target as HTMLElement).closest("button.copy") as HTMLButtonElement | null;
  if (!button) return;
  vscode.postMessage({ type: "copy", text: button.parentElement!.querySelector("code")?.textContent ?? "" });
  button.textContent = "Copied";
  setTimeout(() => (button.textContent = "Copy"), 1500);
});

// --- completion: "/" commands, "@" files ------------------------------------------------------

let commands: CommandInfo[] = [];
let files: string[] | undefined; // the workspace's files, from the extension host
let filesAsked = 0; // when they were last asked for
const chosen = new Set<string>(); // files picked with "@" for the message being written
let shown: { label: string; detail: string; accept: () => void }[] = [];
let selected = 0;
let dismissed: string | undefined; // the input as it was when Escape closed the list

function askFiles(): void {
  if (Date.now() - filesAsked < 10_000) return; // fresh enough: new files show at the next "@"
  filesAsked = Date.now();
  vscode.postMessage({ type: "files" });
}

function suggestions(): typeof shown {
  const caret = input.selectionStart ?? input.value.length;
  const mention = mentionAt(input.value, caret);
  if (mention) {
    if (mention.query === "") askFiles();
    return rankFiles(files ?? [], mention.query).map((path) => ({
      label: `@${path}`, detail: "file",
      accept: () => {
        const done = insertMention(input.value, input.selectionStart ?? input.value.length, path);
        input.value = done.text;
        input.setSelectionRange(done.caret, done.caret);
        chosen.add(path);
      },
    }));
  }
  return completeCommand(commands, input.value).map((c) => ({
    label: `/${c.name}${c.argumentHint ? " " + c.argumentHint : ""}`, detail: `${c.description} · ${c.source}`,
    accept: () => { input.value = `/${c.name} `; },
  }));
}

function showSuggestions(): void {
  shown = input.value === dismissed ? [] : suggestions();
  selected = Math.min(selected, Math.max(shown.length - 1, 0));
  suggest.replaceChildren(...shown.map((s, i) => {
    const item = element("li", i === selected ? "sel" : "", s.label);
    item.append(element("span", "d", s.detail));
    item.dataset.index = String(i);
    return item;
  }));
  suggest.querySelector("li.sel")?.scrollIntoView({ block: "nearest" });
}

function closeSuggestions(): void {
  shown = [];
  selected = 0;
  suggest.replaceChildren();
}

function complete(index: number): void {
  shown[index].accept();
  closeSuggestions();
  input.focus();
}

input.addEventListener("input", () => {
  dismissed = undefined;
  selected = 0;
  showSuggestions();
});
suggest.addEventListener("click", (e) => {
  const item = (e.target as HTMLElement).closest("li");
  if (item?.dataset.index) complete(Number(item.dataset.index));
});

input.addEventListener("keydown", (e) => {
  if (shown.length && (e.key === "Tab" || (e.key === "Enter" && !e.shiftKey))) {
    e.preventDefault();
    complete(selected);
    return;
  }
  if (shown.length && (e.key === "ArrowDown" || e.key === "ArrowUp")) {
    e.preventDefault();
    selected = (selected + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
    showSuggestions();
    return;
  }
  if (shown.length && e.key === "Escape") {
    e.preventDefault();
    dismissed = input.value;
    closeSuggestions();
    return;
  }
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    const context = mentionContext(input.value, chosen);
    vscode.postMessage({ type: "send", text: input.value, ...(context.length ? { context } : {}) });
    input.value = "";
    chosen.clear();
  }
});
stop.addEventListener("click", () => vscode.postMessage({ type: "abort" }));

window.addEventListener("message", ({ data }) => {
  if (data.type === "event") changing(() => applyEvent(data.event));
  else if (data.type === "events") changing(() => data.events.forEach(applyEvent));
  else if (data.type === "queue") showQueue(data.items);
  else if (data.type === "busy") stop.disabled = !data.busy;
  else if (data.type === "commands") {
    commands = data.commands ?? [];
    showSuggestions();
  } else if (data.type === "files") {
    files = data.files ?? [];
    if (document.activeElement === input) showSuggestions();
  }
  else if (data.type === "reset") {
    log.replaceChildren();
    tools.clear();
    current = undefined;
    showQueue([]);
  } else if (data.type === "input") {
    input.value = data.text;
    input.focus();
  }
});

vscode.postMessage({ type: "ready" });
