// The chat view's script, running inside the webview. It keeps the page in step with the
// agent's events one change at a time — a delta touches only its own block, so an opened
// <details> stays open, the view does not jump and the queue's items stay clickable while an
// answer streams — and renders answers as Markdown (raw HTML off) with a copy button on code.
// Live events and a replayed session go through the same code, so both look the same
// (render.ts). Also here: the mode control, "Rewind to here" on the user's messages, the
// offer to execute a plan, and the subagents nested in their task calls (subagents.ts), images
// pasted into the input (attachments.ts) and a history search's match shown (reveal).
// The conversation scrolls above the input, which stays at the bottom; the view follows the
// answer unless the user scrolled up ("Jump to latest" then brings them back). Keys: Escape stops
// a run, ↑/↓ in an empty input go through the prompts sent. The workspace's file names in answers
// are links that open the file.

import { CommandInfo, completeCommand } from "../commands";
import { insertMention, mentionAt, mentionContext, rankFiles } from "../mentions";
import { Transcript, element, reveal, setChanging, setFileLinker } from "./render";
import { Attachments } from "./attachments";
import { SubagentInfo, Subagents } from "./subagents";
import { permissionAnswer, permissionDone, showPermission } from "./permissionCard";
import { PlanView } from "./planView";
import { ProcessNotes } from "./processNote";
import { questionDone, showQuestion } from "./questionCard";
import { FILE_NAME, fileFor } from "../fileLinks";
import type { AgentEvent, ContextItem } from "../protocol";

declare function acquireVsCodeApi(): { postMessage(message: unknown): void; setState(state: unknown): void };

const vscode = acquireVsCodeApi();

const $ = (id: string) => document.getElementById(id)!;
const log = $("log");
const queueList = $("queue");
const input = $("input") as HTMLTextAreaElement;
const stop = $("stop") as HTMLButtonElement;
const modeControl = $("mode");
const latest = $("latest") as HTMLButtonElement;
const suggest = $("suggest");
const attachments = new Attachments(input, $("attachments"));
const selectionList = $("selections");

// Editor selections added to the chat (pi: Add the Selection to the Chat): they go with the next message.
const selections: { item: ContextItem; label: string }[] = [];
function showSelections(): void {
  selectionList.replaceChildren(...selections.map((s, i) => {
    const chip = element("span", "chip", s.label);
    chip.title = "Goes with your next message as context";
    const remove = element("button", "remove", "✕");
    remove.title = "Remove";
    remove.addEventListener("click", () => {
      selections.splice(i, 1);
      showSelections();
    });
    chip.append(remove);
    return chip;
  }));
}

// --- following the end --------------------------------------------------------------------

// The view follows new text only while the user is at the bottom; scrolled up, "Jump to latest" shows.
const atBottom = () => log.scrollTop + log.clientHeight >= log.scrollHeight - 24;
function changing(change: () => void): void {
  const following = atBottom();
  change();
  if (following) log.scrollTop = log.scrollHeight;
  showWhere();
}
setChanging(changing);

function showWhere(): void {
  // data attributes, not classes: VS Code sets <body>'s classes for the theme
  document.body.dataset.scrolledUp = String(!atBottom());
  document.body.dataset.empty = String(log.childElementCount === 0);
}
log.addEventListener("scroll", showWhere);
new ResizeObserver(showWhere).observe(log);
new MutationObserver(showWhere).observe(log, { childList: true });
latest.addEventListener("click", () => {
  log.scrollTop = log.scrollHeight;
  showWhere();
  input.focus();
});

// --- the conversation ---------------------------------------------------------------------

const processNotes = new ProcessNotes(log, (message) => vscode.postMessage(message));
// A stored user message offers "Rewind to here": the conversation (and the files) go back to
// before it, and its text comes back into the input to be edited and sent again.
const transcript = new Transcript(log, {
  onBackground: (block, processId) => processNotes.attach(block, processId),
  onUserStored: (node) => {
    if (node.querySelector("button.rewind")) return;
    const button = element("button", "rewind", "↶ Rewind to here");
    button.title = "Go back to before this message: the conversation and the files the agent changed since";
    node.append(button);
  },
});
const subagents = new Subagents(transcript);
const plan = new PlanView($("plan") as HTMLDetailsElement);
let mode = "ask";

// After a run in plan mode: one action to carry the plan out (in ask mode, or auto-edit).
function offerPlan(): void {
  clearPlanOffer();
  const offer = element("div", "m plan-actions");
  offer.append(element("span", "note", "The plan is ready."));
  for (const [label, target] of [["Execute the plan", "ask"], ["Execute with auto-edit", "auto-edit"]]) {
    const button = element("button", "execute-plan", label);
    button.dataset.mode = target;
    offer.append(button);
  }
  log.append(offer);
}

function clearPlanOffer(): void {
  log.querySelectorAll(".plan-actions").forEach((n) => n.remove());
}

// `live`: as it happens (not the events of a view opened later).
function applyEvent(event: AgentEvent, live: boolean): void {
  if (event.type === "subagent_start") subagents.start(event);
  else if (event.type === "subagent_end") subagents.end(event);
  else if (event.type === "mode_changed") showMode(event.mode);
  else if (event.type === "plan_updated") plan.show(event.entries, event.explanation);
  else if (event.type === "agent_start" && live) clearPlanOffer();
  else if (event.type === "agent_settled" && live && mode === "plan" && !event.aborted) offerPlan();
  else transcript.apply(event);
}

function showMode(value: string): void {
  mode = value;
  modeControl.querySelectorAll("button").forEach((b) => b.setAttribute("aria-checked", String(b.dataset.mode === value)));
  document.body.dataset.mode = value;
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
  const link = (e.target as HTMLElement).closest("a.file") as HTMLElement | null;
  if (link) {
    e.preventDefault();
    vscode.postMessage({ type: "openFile", path: link.dataset.path, ...(link.dataset.line ? { line: Number(link.dataset.line) } : {}) });
    return;
  }
  const button = (e.target as HTMLElement).closest("button") as HTMLButtonElement | null;
  if (!button) return;
  if (button.classList.contains("open-diff")) {
    const card = button.closest(".diff-card") as HTMLElement;
    vscode.postMessage({ type: "diff", toolCallId: card.dataset.toolCallId, diff: card.dataset.diff });
  } else if (button.classList.contains("copy")) {
    vscode.postMessage({ type: "copy", text: button.parentElement!.querySelector("code")?.textContent ?? "" });
    button.textContent = "Copied";
    setTimeout(() => (button.textContent = "Copy"), 1500);
  } else if (button.classList.contains("rewind")) {
    const user = button.closest(".user") as HTMLElement;
    vscode.postMessage({ type: "rewind", entryId: user.dataset.entryId, text: user.dataset.text ?? "" });
  } else if (button.classList.contains("execute-plan")) {
    clearPlanOffer();
    vscode.postMessage({ type: "executePlan", mode: button.dataset.mode });
  } else if (button.dataset.action === "stop") {
    button.disabled = true;
    vscode.postMessage({ type: "abortSubagent", sessionId: button.dataset.sessionId });
  } else if (button.dataset.notice) {
    vscode.postMessage({ type: "noticeAction", action: button.dataset.notice });
  } else if (button.dataset.answer) {
    const card = button.closest(".permission") as HTMLElement;
    const answer = permissionAnswer(card, button.dataset.answer);
    if (answer) vscode.postMessage({ type: "permissionAnswer", sessionId: card.dataset.session, toolCallId: card.dataset.id, ...answer });
  } else if (button.dataset.action === "open") {
    const title = button.closest(".subagent")?.querySelector(".sub-title")?.textContent ?? "subagent";
    vscode.postMessage({ type: "openSubagent", sessionId: button.dataset.sessionId, title });
  }
});
modeControl.addEventListener("click", (e) => {
  const button = (e.target as HTMLElement).closest("button");
  if (button?.dataset.mode && button.dataset.mode !== mode) vscode.postMessage({ type: "setMode", mode: button.dataset.mode });
});
modeControl.addEventListener("keydown", (e) => { // a radio group: the arrows move the choice
  if (e.key !== "ArrowLeft" && e.key !== "ArrowRight") return;
  const buttons = [...modeControl.querySelectorAll("button")];
  const at = buttons.findIndex((b) => b.dataset.mode === mode);
  const next = buttons[(at + (e.key === "ArrowRight" ? 1 : buttons.length - 1)) % buttons.length];
  next.focus();
  next.click();
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
  if ((e.key === "ArrowUp" || e.key === "ArrowDown") && recall(e.key === "ArrowUp" ? -1 : 1)) {
    e.preventDefault();
    return;
  }
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    const context: ContextItem[] = [...selections.splice(0).map((s) => s.item), ...mentionContext(input.value, chosen)];
    showSelections();
    const images = attachments.take();
    if (!input.value.trim() && !images.length) return;
    vscode.postMessage({ type: "send", text: input.value, ...(context.length ? { context } : {}),
                         ...(images.length ? { images } : {}) });
    if (input.value.trim()) sent.push(input.value);
    recalled = undefined;
    input.value = "";
    chosen.clear();
  }
});
stop.addEventListener("click", () => vscode.postMessage({ type: "abort" }));

// Escape stops a run (anywhere in the chat; a completion list open takes it first).
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape" || e.defaultPrevented || stop.disabled) return;
  e.preventDefault();
  vscode.postMessage({ type: "abort" });
});

// --- the prompts sent, recalled with ↑ -------------------------------------------------------

const sent: string[] = []; // this page's prompts (one still queued is not in the conversation yet)
let recalled: number | undefined; // the index shown in the input

// The conversation's prompts, and the last one sent from here if it is not among them.
function prompts(): string[] {
  const said = [...log.querySelectorAll<HTMLElement>(":scope > .user")].map((u) => u.dataset.text ?? "").filter((t) => t.trim());
  const last = sent[sent.length - 1];
  return last && said[said.length - 1] !== last ? [...said, last] : said;
}

// ↑ in an empty input (or one showing a recalled prompt unchanged) shows the one before; ↓ the next.
function recall(step: -1 | 1): boolean {
  const all = prompts();
  const showing = recalled !== undefined && input.value === all[recalled];
  if (!showing && input.value !== "") return false;
  const at = (showing ? recalled! : all.length) + step;
  if (at < 0 || (!showing && step > 0)) return showing || step < 0;
  if (at >= all.length) {
    recalled = undefined;
    input.value = "";
    return true;
  }
  recalled = at;
  input.value = all[at];
  input.setSelectionRange(input.value.length, input.value.length);
  return true;
}

// --- the workspace's file names in answers, as links ------------------------------------------

function linkFiles(block: HTMLElement): void {
  if (!files) {
    if (FILE_NAME.test(block.textContent ?? "")) askFiles();
    FILE_NAME.lastIndex = 0;
    return;
  }
  const walker = document.createTreeWalker(block, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode())
    if (!node.parentElement?.closest("pre, a")) texts.push(node as Text);
  for (const node of texts) {
    const parts: (string | HTMLElement)[] = [];
    let last = 0;
    for (const match of node.data.matchAll(FILE_NAME)) {
      const path = fileFor(files, match[0].replace(/:\d+$/, ""));
      if (!path) continue;
      const link = element("a", "file", match[0]);
      link.setAttribute("href", "#");
      link.title = `Open ${path}${match[1] ? ` at line ${match[1]}` : ""}`;
      link.dataset.path = path;
      if (match[1]) link.dataset.line = match[1];
      parts.push(node.data.slice(last, match.index), link);
      last = match.index! + match[0].length;
    }
    if (parts.length) node.replaceWith(...parts, node.data.slice(last));
  }
}
setFileLinker(linkFiles);

window.addEventListener("message", ({ data }) => {
  if (data.type === "event") changing(() => applyEvent(data.event, true));
  // a view opened later: the events so far, a subagent's as {child, event}
  else if (data.type === "events") changing(() => data.events.forEach((e: AgentEvent | { child: string; event: AgentEvent }) =>
    "child" in e ? subagents.event(e.child, e.event) : applyEvent(e, false)));
  else if (data.type === "subevent") changing(() => subagents.event(data.sessionId, data.event));
  else if (data.type === "subagents") changing(() => data.items.forEach((item: SubagentInfo) => subagents.start(item)));
  // a line from the extension itself (the daemon stopped, came back…), with its buttons
  else if (data.type === "notice") changing(() => {
    const line = element("div", "m notice note", data.text);
    for (const action of data.actions ?? []) Object.assign(line.appendChild(element("button", "", action)).dataset, { notice: action });
    log.append(line);
  });
  else if (data.type === "mode") showMode(data.mode);
  else if (data.type === "permission") changing(() => showPermission(log, transcript.tools, data.ask));
  else if (data.type === "permissionDone") permissionDone(log, data.sessionId, data.toolCallId);
  else if (data.type === "question") changing(() => showQuestion(log, transcript.tools, data.ask, (result) =>
    vscode.postMessage({ type: "questionAnswer", sessionId: data.ask.sessionId, toolCallId: data.ask.toolCallId, result })));
  else if (data.type === "questionDone") questionDone(log, data.sessionId, data.toolCallId);
  else if (data.type === "queue") showQueue(data.items);
  else if (data.type === "busy") stop.disabled = !data.busy;
  else if (data.type === "commands") {
    commands = data.commands ?? [];
    showSuggestions();
  } else if (data.type === "files") {
    files = data.files ?? [];
    if (document.activeElement === input) showSuggestions();
    log.querySelectorAll<HTMLElement>(".text").forEach(linkFiles); // names drawn before the list came
  }
  else if (data.type === "focus") input.focus();
  else if (data.type === "attach") {
    selections.push({ item: data.item, label: data.label });
    showSelections();
  }
  else if (data.type === "reset") {
    transcript.clear();
    subagents.clear();
    plan.clear();
    showQueue([]);
    showWhere();
  } else if (data.type === "input") {
    input.value = data.text;
    input.focus();
  } else if (data.type === "restoreInput") { // Stop gave queued messages back: before what is being typed, and said so
    input.value = [data.text, input.value].filter((t: string) => t.trim()).join("\n\n");
    input.focus();
    changing(() => log.append(element("div", "m notice note", data.note)));
  } else if (data.type === "session") {
    document.body.dataset.sessionId = data.sessionId;
    vscode.setState({ sessionId: data.sessionId }); // a tab reopened with the window comes back on its session
  }
  else if (data.type === "reveal") reveal(log, data.query ?? "", data.entryId);
});

vscode.postMessage({ type: "ready" });
