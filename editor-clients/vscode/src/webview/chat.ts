// The chat view's script, running inside the webview. It keeps the page in step with the
// agent's events one change at a time — a delta touches only its own block, so an opened
// <details> stays open, the view does not jump and the queue's items stay clickable while an
// answer streams — and renders answers as Markdown (raw HTML off) with a copy button on code.
// Live events and a replayed session go through the same code, so both look the same
// (render.ts). Also here: the mode selector, "Rewind to here" on the user's messages, the
// offer to execute a plan, and the subagents nested in their task calls (subagents.ts), images
// pasted into the input (attachments.ts) and a history search's match shown (reveal).

import { CommandInfo, completeCommand } from "../commands";
import { insertMention, mentionAt, mentionContext, rankFiles } from "../mentions";
import { Transcript, element, reveal, setChanging } from "./render";
import { Attachments } from "./attachments";
import { Subagents } from "./subagents";
import { permissionDone, showPermission } from "./permissionCard";

type Json = any;
declare function acquireVsCodeApi(): { postMessage(message: unknown): void; setState(state: unknown): void };

const vscode = acquireVsCodeApi();

const $ = (id: string) => document.getElementById(id)!;
const log = $("log");
const queueList = $("queue");
const input = $("input") as HTMLTextAreaElement;
const stop = $("stop") as HTMLButtonElement;
const modeSelect = $("mode") as HTMLSelectElement;
const suggest = $("suggest");
const attachments = new Attachments(input, $("attachments"));

// --- following the end --------------------------------------------------------------------

// The view follows new text only while the user is at the bottom.
function changing(change: () => void): void {
  const scroller = document.scrollingElement ?? document.body;
  const atBottom = scroller.scrollTop + window.innerHeight >= scroller.scrollHeight - 24;
  change();
  if (atBottom) scroller.scrollTop = scroller.scrollHeight;
}
setChanging(changing);

// --- the conversation ---------------------------------------------------------------------

// A stored user message offers "Rewind to here": the conversation (and the files) go back to
// before it, and its text comes back into the input to be edited and sent again.
const transcript = new Transcript(log, {
  onUserStored: (node) => {
    if (node.querySelector("button.rewind")) return;
    const button = element("button", "rewind", "↶ Rewind to here");
    button.title = "Go back to before this message: the conversation and the files the agent changed since";
    node.append(button);
  },
});
const subagents = new Subagents(transcript);
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
function applyEvent(event: Json, live: boolean): void {
  if (event.type === "subagent_start") subagents.start(event);
  else if (event.type === "subagent_end") subagents.end(event);
  else if (event.type === "mode_changed") showMode(event.mode);
  else if (event.type === "agent_start" && live) clearPlanOffer();
  else if (event.type === "agent_settled" && live && mode === "plan" && !event.aborted) offerPlan();
  else transcript.apply(event);
}

function showMode(value: string): void {
  mode = value;
  modeSelect.value = value;
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
  const button = (e.target as HTMLElement).closest("button") as HTMLButtonElement | null;
  if (!button) return;
  if (button.classList.contains("copy")) {
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
    vscode.postMessage({ type: "permissionAnswer", sessionId: card.dataset.session, toolCallId: card.dataset.id,
                        answer: button.dataset.answer });
  } else if (button.dataset.action === "open") {
    vscode.postMessage({ type: "openSubagent", sessionId: button.dataset.sessionId });
  }
});
modeSelect.addEventListener("change", () => vscode.postMessage({ type: "setMode", mode: modeSelect.value }));

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
    const images = attachments.take();
    if (!input.value.trim() && !images.length) return;
    vscode.postMessage({ type: "send", text: input.value, ...(context.length ? { context } : {}),
                         ...(images.length ? { images } : {}) });
    input.value = "";
    chosen.clear();
  }
});
stop.addEventListener("click", () => vscode.postMessage({ type: "abort" }));

window.addEventListener("message", ({ data }) => {
  if (data.type === "event") changing(() => applyEvent(data.event, true));
  // a view opened later: the events so far, a subagent's as {child, event}
  else if (data.type === "events") changing(() => data.events.forEach((e: Json) =>
    e.child ? subagents.event(e.child, e.event) : applyEvent(e, false)));
  else if (data.type === "subevent") changing(() => subagents.event(data.sessionId, data.event));
  else if (data.type === "subagents") changing(() => data.items.forEach((item: Json) => subagents.start(item)));
  // a line from the extension itself (the daemon stopped, came back…), with its buttons
  else if (data.type === "notice") changing(() => {
    const line = element("div", "m notice note", data.text);
    for (const action of data.actions ?? []) Object.assign(line.appendChild(element("button", "", action)).dataset, { notice: action });
    log.append(line);
  });
  else if (data.type === "mode") showMode(data.mode);
  else if (data.type === "permission") changing(() => showPermission(log, transcript.tools, data.ask));
  else if (data.type === "permissionDone") permissionDone(log, data.sessionId, data.toolCallId);
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
    transcript.clear();
    subagents.clear();
    showQueue([]);
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
