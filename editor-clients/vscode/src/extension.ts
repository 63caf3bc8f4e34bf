// The VS Code extension: a chat view on the pi-daemon, sessions, pickers and permissions.
// All protocol work is in rpcClient.ts; this file is only the VS Code surface.

import * as vscode from "vscode";
import * as os from "os";
import * as path from "path";
import { Commands, Conversation, ParamsArg, PiClient, TreeItem, WorkspaceTrustRequest } from "./rpcClient";
import type { Connection } from "./daemonLocator";
import { chatHtml, newNonce } from "./chatHtml";
import { statusText } from "./status";
import { registerReview, reportDirty, selectionContext, vscodeFiles } from "./changesView";
import { fsHandlers } from "./editorFs";
import { vscodeLanguage } from "./languageFeatures";
import { workspaceFiles } from "./workspaceFiles";
import type { AgentEvent, AgentMessage, ContextItem, EditDetails, Image, MethodName, SessionLoadResult, SessionSummary, ThinkingLevel } from "./protocol";
import { forkChoices } from "./rewind";
import type { FromPage, ToPage, TranscriptItem } from "./chatPage";
import { ChatHost, ModeIndicator, executePlan, pickMode, rewindTo, setMode } from "./sessionActions";
import { SubagentRouter, childEvents, storedSubagents } from "./subagents";
import { daemonCommand, install, offerInstall } from "./vscodeDaemon";
import { DaemonStartError, returnedInput } from "./rpcClient";
import { CrashRecovery } from "./crashRecovery";
import { chooseModel, modelMissing, pickModel } from "./firstRun";
import { MANAGE_ACCESS, authFailure, sendStoredKeys } from "./modelKeys";
import { manageModelAccess } from "./modelAccess";
import { saveBeforeCommands, saveDocuments } from "./saveDocuments";
import { ChatTabs, PANEL_TYPE } from "./chatTabs";
import { pickHistory } from "./history";
import { compactionSaid } from "./compactReply";
import { PermissionReview } from "./permissionReview";
import { UserQuestions } from "./userQuestions";
import { SessionTree, goBack } from "./sessionTree";
import { sessionItem } from "./sessionList";
import { openWorkspaceFile } from "./openFile";
import { registerEditDiffs, showEdit } from "./showEdit";
import { ProcessView } from "./processView";

let client: PiClient | undefined;
let connection: Connection = "attach"; // how the client reaches the daemon (pi.connection), as it was started
let starting: Promise<PiClient> | undefined;
let startingEarly = false; // `starting` is the early start (ensureClient's `early`), which asks nothing
let context: vscode.ExtensionContext;
let conversation = new Conversation();
let view: vscode.WebviewView | undefined;
let status: vscode.StatusBarItem;
let output: vscode.OutputChannel;
// The events of the conversation on screen (without deltas: each message_end carries the
// whole message), to fill a chat view opened later; a subagent's as {child, event}.
let transcript: TranscriptItem[] = [];
const subagents = new SubagentRouter(); // the child sessions whose events go into their task calls
let modes: ModeIndicator;
const slashCommands = new Commands(); // completion after "/" in the chat input
let tabs: ChatTabs; // the chats in editor tabs, each on its own session (chatTabs.ts)
// The side bar's session: the daemon's current one (a tab names its own in every request).
let sidebarSession: string | undefined;
let pendingReveal: { query: string; entryId?: string } | undefined; // a History match, shown after the replay
const recovery = new CrashRecovery({
  post,
  show: (event) => {
    transcript.push(event);
    post({ type: "event", event });
  },
  sessionId: () => sidebarSession,
  partialAnswer: () => {
    const last = conversation.messages[conversation.messages.length - 1];
    const text = last?.streaming && last.role === "assistant" ? last.blocks.map((b) => b.text ?? "").join("") : "";
    return text.trim() ? text : undefined;
  },
  settle: () => {
    conversation.busy = false;
    post({ type: "busy", busy: false });
  },
  redraw: (sessionId) => resume(sessionId),
  log: (text) => output.append(text),
});
let permissions: PermissionReview;
let processes: ProcessView; // the Processes view under the chat (processView.ts)
let questions: UserQuestions;

function postCommands(): void {
  post({ type: "commands", commands: slashCommands.list });
}

function post(message: ToPage): void {
  view?.webview.postMessage(message);
}

// The transcript for a page opened now: the answer being written carries what it has so far (deltas are not
// kept), so a page that opens mid-answer (a reloaded window's) shows it whole, not only what arrives next.
function pageTranscript(): TranscriptItem[] {
  const last = conversation.messages[conversation.messages.length - 1];
  if (!last?.streaming) return transcript;
  for (let i = transcript.length - 1; i >= 0; i--) {
    const item = transcript[i];
    if ("type" in item && item.type === "message_start") {
      const message = { ...item.message, content: last.blocks } as AgentMessage;
      return [...transcript.slice(0, i), { type: "message_start", message }, ...transcript.slice(i + 1)];
    }
  }
  return transcript;
}

function queueItems() {
  return conversation.queue.items.map((q) => ({ id: q.queueId, text: q.text, kind: q.kind }));
}

function resetView(): void {
  conversation = new Conversation();
  transcript = [];
  subagents.clear();
  post({ type: "reset" });
  post({ type: "busy", busy: false });
}

async function refreshStatus(): Promise<void> {
  if (!client) return;
  modes.refresh(client).catch((error: any) => output.append(`mode: ${error.message ?? error}\n`));
  try {
    status.text = await statusText(client);
    const server = client.server;
    status.tooltip = server?.shared
      ? `pi: select the model\nThe workspace's pi-daemon server (pid ${server.pid}) is shared: other windows and editors may be on its sessions, and it goes on after this window closes.`
      : "pi: select the model";
  } catch (error: any) {
    output.append(`status: ${error.message ?? error}\n`); // the last good text stays
  }
}

// The folder pi works in: the only one, the one chosen before, or the user's pick.
async function workspaceFolder(ask = false): Promise<string> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length === 0) return os.homedir();
  if (folders.length === 1) return folders[0].uri.fsPath;
  const chosen = context.workspaceState.get<string>("pi.folder");
  if (!ask && chosen && folders.some((f) => f.uri.fsPath === chosen)) return chosen;
  const pick = await vscode.window.showWorkspaceFolderPick({ placeHolder: "Which folder should pi work in?" });
  const folder = (pick ?? folders[0]).uri.fsPath;
  await context.workspaceState.update("pi.folder", folder);
  return folder;
}

// The daemon starts on first use: opening the chat or running a pi command. Not found, the user is
// offered to install it; installed, it starts. `early` (the start when a workspace where pi was used opens,
// see prestart): nothing is asked (no install offer, no log shown); the user's first use asks.
function ensureClient(early = false): Promise<PiClient> {
  if (client) return Promise.resolve(client);
  // the user's use while an early start is under way: that start, or, failed, one that may ask
  if (starting && startingEarly && !early) return starting.catch(() => ensureClient());
  if (!starting) startingEarly = early;
  starting ??= (async () => {
    const storage = context.globalStorageUri.fsPath;
    const folder = await workspaceFolder();
    let found = await daemonCommand(storage, folder);
    if (!found && !early && (await offerInstall(context, output)))
      found = await daemonCommand(storage, folder);
    if (!found) {
      status.text = "π (not installed)";
      throw new Error("pi-daemon is not installed: run \"pi: Install pi-daemon\", or set pi.command in your user settings.");
    }
    output.append(`starting ${found.command} ${found.args.join(" ")} (found: ${found.source}; pi.connection: ${found.connection})\n`);
    connection = found.connection;
    const started = new PiClient({
      command: found.command, args: found.args, cwd: folder,
      onLog: (text) => output.append(text), onPermission: (request, cancelled) => permissions.ask(request, cancelled),
      onWorkspaceTrust: askWorkspaceTrust, onAskUser: (request, cancelled) => questions.ask(request, cancelled),
      fs: fsHandlers(vscodeFiles), language: vscodeLanguage(), save: saveBeforeCommands() ? saveDocuments : undefined,
    });
    started.onEvent(onEvent);
    started.onEvent((_sessionId, event) => {
      if (processes.list.apply(event) && event.type === "process_started") processes.started(event.process);
    });
    started.onExit(() => processes.list.clear()); // its processes ended with it
    // Stop gave queued messages back: into the input of the chat that stopped (a tab's, else the side bar's)
    started.onQueueReturned((sessionId, texts) => {
      const message = { type: "restoreInput", ...returnedInput(texts) };
      if (!(sessionId && tabs.post(sessionId, message))) post(message);
    });
    started.onRestart(() => {
      tabs.daemonRestarted();
      loadProcesses(started);
      sendStoredKeys(started, context.secrets, (t) => output.append(t));
      refreshStatus();
    });
    recovery.attach(started);
    status.text = "π starting…";
    try {
      await started.start();
    } catch (error: any) {
      await started.stop();
      status.text = "π (did not start)";
      if (!early) output.show(true);
      const missing = error instanceof DaemonStartError && error.code === "ENOENT" && found.configured;
      throw new Error(`pi-daemon did not start: ${error.message ?? error}${missing ? " (check pi.command in your user settings)" : ""}`);
    }
    client = started;
    markUsed();
    if (started.server?.shared) output.append(`connected to the workspace's shared pi-daemon server (pid ${started.server.pid})\n`);
    loadProcesses(started);
    await sendStoredKeys(started, context.secrets, (t) => output.append(t));
    refreshStatus();
    slashCommands.load(started).then(postCommands, (error) => output.append(`commands: ${error.message ?? error}\n`));
    return started;
  })().finally(() => (starting = undefined));
  return starting;
}

function loadProcesses(client: PiClient): void {
  processes.list.load(client).catch((error: any) => output.append(`process/list: ${error.message ?? error}\n`));
}

// Stops the daemon and starts it again (new settings, another folder), back in the same session.
async function restart(reason: string): Promise<void> {
  const old = client;
  if (!old) return;
  const sessionId = (await old.request("getState").catch(() => undefined))?.sessionId;
  client = undefined;
  await old.stop();
  const fresh = await ensureClient();
  resetView();
  if (sessionId) await fresh.request("session/load", { sessionId, replay: true }).catch(() => undefined);
  vscode.window.showInformationMessage(`pi: ${reason}; the daemon was restarted.`);
}

async function askWorkspaceTrust(request: WorkspaceTrustRequest): Promise<boolean | undefined> {
  const detail = [
    `${request.workspace} has its own pi-daemon configuration. Until you trust it, these settings are ignored:`,
    ...request.reasons.map((r) => `• ${r.field} (${r.file}): ${r.effect}`),
    "Trust it only if you trust the people who wrote this folder.",
  ].join("\n");
  const choice = await vscode.window.showWarningMessage("Trust this workspace?", { modal: true, detail }, "Trust", "Don't trust");
  return choice === undefined ? undefined : choice === "Trust"; // dismissed: no answer, asked again next start
}

// The client as the review surface sees it: a request starts the daemon on first use, and
// event listeners follow every client started (a restart makes a new one).
const eventListeners: ((sessionId: string, event: AgentEvent) => void)[] = [];
const lazyClient = {
  request: async <M extends MethodName>(method: M, ...params: ParamsArg<M>) => (await ensureClient()).request(method, ...params),
  prompt: async (...args: Parameters<PiClient["prompt"]>) => (await ensureClient()).prompt(...args),
  notify: <M extends MethodName>(method: M, ...params: ParamsArg<M>) => client?.notify(method, ...params),
  get workspace() { return client?.workspace ?? ""; },
  onEvent: (listener: (sessionId: string, event: AgentEvent) => void) => { eventListeners.push(listener); },
} as unknown as PiClient;

function onEvent(sessionId: string, event: AgentEvent): void {
  const refused = authFailure(event);
  if (refused) {
    const notice = { type: "notice", text: refused.text, actions: [MANAGE_ACCESS] };
    if (!tabs.post(sessionId, notice)) post(notice);
  }
  if (tabs.route(sessionId, event) && sessionId !== sidebarSession && !subagents.children.has(sessionId)) {
    for (const listener of eventListeners) listener(sessionId, event);
    return; // an editor tab's session only
  }
  if (event.type === "replay_end" && pendingReveal) {
    post({ type: "reveal", ...pendingReveal });
    pendingReveal = undefined;
  }
  const delta = event.type === "message_update" || event.type === "tool_execution_update";
  if (subagents.route(sessionId, event) === "child") { // drawn in its task call; the session's state is not its
    if (!delta) transcript.push({ child: sessionId, event });
    post({ type: "subevent", sessionId, event });
    return;
  }
  for (const listener of eventListeners) listener(sessionId, event);
  sidebarSession ??= sessionId;
  rememberChat();
  if (slashCommands.apply(event)) postCommands();
  conversation.apply(event);
  if (!delta) transcript.push(event);
  post({ type: "event", event });
  if (event.type === "mode_changed") modes.show(event.mode);
  if (event.type === "queue_update") post({ type: "queue", items: queueItems() });
  if (event.type === "agent_start" || event.type === "agent_settled") post({ type: "busy", busy: conversation.busy });
  // an edit's details (EditDetails) carry its diff
  const edited = event.type === "tool_execution_end" ? event.result?.details as Partial<EditDetails> | null | undefined : undefined;
  if (edited?.diff) {
    const diff = edited.diff;
    const changed = vscode.workspace.asRelativePath(edited.path as string);
    vscode.window.showInformationMessage(`pi changed ${changed}`, "Show diff").then((choice) => {
      if (choice) workspaceFolder().then((folder) => showEdit(folder, diff));
    });
  }
  if (event.type === "permission_timeout") {
    vscode.window.showWarningMessage(`pi: nobody answered within ${event.timeoutSeconds} s, so ${event.toolName} was not run`);
  }
  if (["agent_start", "agent_settled", "model_changed"].includes(event.type)) refreshStatus();
  if (event.type === "agent_settled") tree.refresh();
}

// The text is never lost: a daemon still starting (or being installed, or coming back) is waited for,
// a missing model is chosen first (firstRun.ts), and what could not be sent goes back into the input.
async function send(text: string, items?: ContextItem[], images?: Image[]): Promise<void> {
  if (!text.trim() && !images?.length) return;
  try {
    await recovery.ready();
    const client = await ensureClient();
    await restoring;
    sidebarSession ??= (await client.request("getState")).sessionId;
    if (conversation.busy) return await steerOrFollow(client, text, items, images);
    let result;
    try {
      result = await client.prompt(text, undefined, sidebarSession, items, images);
    } catch (error: any) {
      const missing = modelMissing(error);
      if (!missing) throw error;
      if (!(await chooseModel(client, context.secrets, missing))) {
        post({ type: "input", text });
        vscode.window.showInformationMessage("pi: no model chosen, so your message was not sent; it is back in the input.");
        return;
      }
      refreshStatus();
      result = await client.prompt(text, undefined, sidebarSession, items, images);
    }
    const command = result.command;
    if (result.disposition === "command" && command) {
      if (command.name === "new") resetView();
      sidebarSession = (await client.request("getState")).sessionId; // /new, /resume … move the side bar's chat
      // What a built-in command answers depends on the command: /export answers the file it wrote.
      const file = (command.result as { file?: string } | null)?.file;
      if (command.name === "export") vscode.window.showInformationMessage(`pi: exported to ${file && vscode.workspace.asRelativePath(file)}`);
      else vscode.window.setStatusBarMessage(`pi: /${command.name} done`, 3000);
      refreshStatus();
    }
  } catch (error) {
    if (compactionSaid(text, error, transcript)) return; // the chat's line says why
    post({ type: "input", text });
    throw error;
  }
}

async function steerOrFollow(client: PiClient, text: string, context?: ContextItem[], images?: Image[]): Promise<void> {
  const pick = await vscode.window.showQuickPick(
    [{ label: "Steer", description: "after the current tool calls", value: "steer" },
     { label: "Follow up", description: "when the agent is done", value: "followUp" }],
    { placeHolder: "The agent is working. Send this as…" });
  if (!pick) return post({ type: "input", text }); // not sent: back in the input
  await client.prompt(text, pick.value as "steer" | "followUp", sidebarSession, context, images);
  post({ type: "queue", items: queueItems() });
}

// The session drawn in the side bar's chat: replayed into a cleared view; or, given `fromSeq` (the view
// holds everything before it), the daemon's catch-up from there (or its replay, when it kept too little:
// the view is cleared first). A run still going shows as going: busy, Stop on, its answer arriving.
async function redraw(sessionId: string, fromSeq?: number): Promise<SessionLoadResult> {
  if (fromSeq === undefined) resetView();
  sidebarSession = sessionId;
  rememberChat();
  const client = await ensureClient();
  let loaded = await client.load(sessionId, fromSeq === undefined ? { replay: true } : { fromSeq });
  if (fromSeq !== undefined && loaded.catchUp !== "events") {
    resetView(); // at once, before the replay's events (they follow the reply)
    if (!loaded.catchUp) loaded = await client.load(sessionId); // a daemon that does not catch up: replayed
  }
  if (loaded.state.isStreaming && !conversation.busy) {
    conversation.busy = true;
    post({ type: "busy", busy: true });
  }
  refreshStatus();
  tree.refresh();
  // its finished subagents, under their task calls (a replay sends no subagent events)
  const { entries } = await client.request("session/entries", { sessionId, scope: "file" });
  const stored = storedSubagents(entries);
  transcript.push(...stored);
  if (stored.length) post({ type: "events", events: stored });
  return loaded;
}

// The side bar's session after the connection to the daemon was made again: in attach mode the server kept
// it (a run may be going on), so the view goes on from the last event it drew; else it is drawn again.
function resume(sessionId: string): Promise<SessionLoadResult> {
  const seen = client?.seen(sessionId);
  return redraw(sessionId, connection === "attach" && seen !== undefined ? seen + 1 : undefined);
}

const host: ChatHost = { client: ensureClient, post, redraw, send: (text) => send(text) };

const tree = new SessionTree(() => client);

async function pickSession(placeHolder: string): Promise<SessionSummary | undefined> {
  const { sessions } = await (await ensureClient()).request("session/list");
  return (await vscode.window.showQuickPick(sessions.map((s) => sessionItem(s)), { placeHolder }))?.session;
}

const commands: Record<string, () => Promise<void>> = {
  "pi.newSession": async () => {
    sidebarSession = (await (await ensureClient()).request("session/new")).sessionId;
    rememberChat();
    resetView();
    refreshStatus();
  },
  "pi.resumeSession": async () => {
    const session = await pickSession("Resume which session?");
    if (session) await redraw(session.sessionId);
  },
  "pi.forkSession": async () => {
    const client = await ensureClient();
    const { entries } = await client.request("session/entries");
    const pick = await vscode.window.showQuickPick(forkChoices(entries), { placeHolder: "Fork from which message?" });
    if (!pick) return;
    const forked = await client.request("session/fork", { entryId: pick.id });
    await redraw(forked.sessionId);
    view?.webview.postMessage({ type: "input", text: forked.text });
  },
  "pi.renameSession": async () => {
    const name = await vscode.window.showInputBox({ prompt: "Session name" });
    if (name !== undefined) await (await ensureClient()).request("session/setName", { name });
  },
  "pi.deleteSession": async () => {
    const session = await pickSession("Delete which session?");
    if (session && (await vscode.window.showWarningMessage("Delete this session?", { modal: true }, "Delete")))
      await (await ensureClient()).request("session/delete", { sessionId: session.sessionId, file: session.file });
  },
  "pi.selectMode": async () => pickMode(host, modes.mode),
  "pi.abort": async () => {
    if (client && conversation.busy) await client.abort(); // stopping is not an error, nor is "nothing to stop"
  },
  "pi.selectModel": async () => {
    await pickModel(await ensureClient(), context.secrets);
    refreshStatus();
  },
  "pi.manageModelAccess": async () => {
    await manageModelAccess(await ensureClient(), context.secrets);
    refreshStatus();
  },
  "pi.selectThinking": async () => {
    const levels: ThinkingLevel[] = ["off", "minimal", "low", "medium", "high", "xhigh"];
    const level = (await vscode.window.showQuickPick(levels)) as ThinkingLevel | undefined;
    if (level) await (await ensureClient()).request("setThinkingLevel", { level });
  },
  "pi.showLog": async () => output.show(),
  "pi.installDaemon": async () => {
    const found = await daemonCommand(context.globalStorageUri.fsPath, await workspaceFolder());
    if (found) vscode.window.showInformationMessage(`pi: pi-daemon is there: ${found.command} (${found.source})`);
    else if (await install(context, output)) await ensureClient();
  },
  "pi.selectFolder": async () => {
    await workspaceFolder(true);
    if (client) await restart("pi now works in another folder");
    else await ensureClient();
  },
  "pi.refreshTree": async () => tree.refresh(),
  // The selection goes with the next message typed in the chat (shown above its input).
  "pi.sendSelection": async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor || editor.selection.isEmpty) return;
    const selection = selectionContext(editor);
    const inside = path.relative(await workspaceFolder(), selection.path); // shown and sent as the workspace names it
    const item = inside && !inside.startsWith("..") && !path.isAbsolute(inside) ? { ...selection, path: inside } : selection;
    const { start, end } = editor.selection;
    const last = end.character === 0 && end.line > start.line ? end.line : end.line + 1; // a selection of whole lines
    const lines = start.line + 1 === last ? `${last}` : `${start.line + 1}-${last}`;
    await focusChat({ type: "attach", item, label: `${item.path}:${lines}` });
  },
  "pi.focusChat": async () => focusChat(),
};

// The side bar's chat shown, its input focused, then `message` posted (a page still loading gets
// them when it is ready).
let forReady: ToPage[] = [];
async function focusChat(message?: ToPage): Promise<void> {
  forReady = [...(message ? [message] : []), { type: "focus" }];
  await vscode.commands.executeCommand("pi.chat.focus");
  if (view) {
    forReady.forEach(post);
    forReady = [];
  }
}

// The side bar's session, kept for the next window: a reload comes back to it (chatTabs.ts does it for tabs).
const CHAT_SESSION = "pi.chatSession";
function rememberChat(): void {
  if (sidebarSession && context.workspaceState.get(CHAT_SESSION) !== sidebarSession)
    context.workspaceState.update(CHAT_SESSION, sidebarSession);
}

// The chat's last session being loaded (restoreChat), which a prompt typed meanwhile waits for: it goes to
// that session once the daemon has it, after its replay.
let restoring: Promise<void> | undefined;
function restoreChat(): Promise<void> {
  const remembered = context.workspaceState.get<string>(CHAT_SESSION);
  if (restoring || !remembered || sidebarSession || transcript.length) return restoring ?? Promise.resolve();
  restoring = redraw(remembered).then(() => undefined, (error: any) => {
    output.append(`the chat's last session did not load: ${error.message ?? error}\n`);
    sidebarSession = undefined;
    return context.workspaceState.update(CHAT_SESSION, undefined);
  }).finally(() => (restoring = undefined));
  return restoring;
}

// A subagent's session as a chat in an editor tab: from the events drawn so far when a chat shows
// it, else loaded from its file.
async function openSubagent(sessionId: string, title: string): Promise<void> {
  const events = childEvents(transcript, sessionId);
  const shown = events.length ? events : tabs.childEvents(sessionId);
  if (shown) tabs.openCurrent(sessionId, title, shown);
  else await tabs.open(sessionId, title);
}

// The buttons of the chat's notices (crashRecovery.ts).
async function noticeAction(action: string): Promise<void> {
  if (action === "Show Log") output.show();
  else if (action === "Restart" && client) await recovery.revive(client);
  else if (action === "Continue" && client) await client.request("continue", { sessionId: sidebarSession });
}

// What every chat page asks alike, the side bar's and the editor tabs'; true when it was one of these.
async function sharedMessage(message: FromPage, reply: (message: ToPage) => void): Promise<boolean> {
  if (message.type === "ready") reply({ type: "processes", processes: processes.list.all }); // and on to the page's own
  if (message.type === "files") reply({ type: "files", files: await workspaceFiles(await workspaceFolder()) });
  else if (message.type === "diff") await showEdit(await workspaceFolder(), message.diff);
  else if (message.type === "openFile") await openWorkspaceFile(await workspaceFolder(), message.path, message.line);
  else if (message.type === "copy") await vscode.env.clipboard.writeText(message.text);
  else if (message.type === "abortSubagent") await (await ensureClient()).abort(message.sessionId);
  else if (message.type === "openSubagent") await openSubagent(message.sessionId, message.title ?? "subagent");
  else if (message.type === "process") await processes[message.action](message.id);
  else if (message.type === "permissionAnswer") permissions.fromChat(message.sessionId, message.toolCallId, message.answer, message.reason);
  else if (message.type === "questionAnswer") questions.answer(message.sessionId, message.toolCallId, message.result);
  else if (message.type === "noticeAction" && message.action === MANAGE_ACCESS) await commands["pi.manageModelAccess"]();
  else return false;
  return true;
}

// Issue #29: the chat in editor tabs, New and History on its title bars, History's full-text search.
const chatCommands: Record<string, () => Promise<void>> = {
  "pi.openChatInEditor": async () => {
    const state = await (await ensureClient()).request("getState");
    sidebarSession = state.sessionId;
    tabs.openCurrent(state.sessionId, state.sessionName, transcript);
  },
  "pi.tab.new": async () => tabs.openNew(),
  "pi.history": async () => openFromHistory(false),
  "pi.searchHistory": async () => openFromHistory(false),
  "pi.tab.history": async () => openFromHistory(true),
};

// History's pick opens in the side bar's chat, or in a tab (from a tab's title bar).
async function openFromHistory(inTab: boolean): Promise<void> {
  const chosen = await pickHistory(await ensureClient());
  if (!chosen) return;
  if (inTab) return tabs.open(chosen.session.sessionId, chosen.title, chosen.reveal);
  if (chosen.session.sessionId === sidebarSession && chosen.reveal) return post({ type: "reveal", ...chosen.reveal });
  pendingReveal = chosen.reveal;
  await redraw(chosen.session.sessionId);
}

class ChatView implements vscode.WebviewViewProvider {
  constructor(private readonly extensionUri: vscode.Uri) {}

  resolveWebviewView(webviewView: vscode.WebviewView): void {
    view = webviewView;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    webviewView.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    webviewView.webview.html = chatHtml({
      cspSource: webviewView.webview.cspSource,
      scriptUri: webviewView.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      nonce: newNonce(),
    });
    webviewView.onDidDispose(() => { if (view === webviewView) view = undefined; });
    webviewView.webview.onDidReceiveMessage(async (message: FromPage) => {
      try {
        if (await sharedMessage(message, post)) return;
        if (message.type === "send") await send(message.text, message.context, message.images);
        else if (message.type === "abort") await commands["pi.abort"]();
        else if (message.type === "removeQueued") await (await ensureClient()).request("removeQueued", { queueId: message.queueId });
        else if (message.type === "rewind") await rewindTo(host, message.entryId);
        else if (message.type === "setMode") await setMode(host, message.mode);
        else if (message.type === "executePlan") await executePlan(host, message.mode);
        else if (message.type === "noticeAction") await noticeAction(message.action);
        else if (message.type === "ready") {
          post({ type: "reset" });
          post({ type: "events", events: pageTranscript() });
          post({ type: "queue", items: queueItems() });
          post({ type: "busy", busy: conversation.busy });
          post({ type: "mode", mode: modes.mode });
          postCommands();
          permissions.repost((sessionId) => !tabs.owns(sessionId), post);
          questions.repost((sessionId) => !tabs.owns(sessionId), post);
          forReady.forEach(post);
          forReady = [];
          await ensureClient();
          await restoreChat();
        }
      } catch (error: any) {
        vscode.window.showErrorMessage(`pi: ${error.message ?? error}`);
      }
    });
  }
}

export async function activate(extensionContext: vscode.ExtensionContext): Promise<void> {
  context = extensionContext;
  output = vscode.window.createOutputChannel("pi-daemon");
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "pi.selectModel";
  status.text = "π";
  status.tooltip = "pi";
  status.show();
  modes = new ModeIndicator(host);
  permissions = new PermissionReview(() => client?.workspace ?? "", (sessionId, m) => tabs.post(sessionId, m) || post(m),
                                     async (sessionId) => (await (await ensureClient()).request("getState", { sessionId })).sandbox);
  processes = new ProcessView(ensureClient, () => view?.visible ?? false);
  processes.list.onChange(() => { // the chats' bash cards say how their processes are doing
    const message = { type: "processes", processes: processes.list.all };
    post(message);
    tabs?.postAll(message);
  });
  questions = new UserQuestions((sessionId, m) => tabs.post(sessionId, m) || post(m), (text) => {
    const shown = vscode.window.setStatusBarMessage(text);
    return () => shown.dispose();
  });
  context.subscriptions.push(reportDirty(lazyClient), modes, permissions, registerEditDiffs(), processes);
  registerReview(context, lazyClient);
  tabs = new ChatTabs({
    client: ensureClient, extensionUri: context.extensionUri, shared: sharedMessage, commands: () => slashCommands.list,
    askQueueKind: async () => (await vscode.window.showQuickPick(
      [{ label: "Steer", description: "after the current tool calls", value: "steer" as const },
       { label: "Follow up", description: "when the agent is done", value: "followUp" as const }],
      { placeHolder: "The agent is working. Send this as…" }))?.value,
    sidebar: () => ({ sessionId: sidebarSession, events: transcript }),
    permissions: (shows, reply) => {
      permissions.repost(shows, reply);
      questions.repost(shows, reply);
    },
  });
  context.subscriptions.push(
    output, status,
    vscode.window.registerWebviewPanelSerializer(PANEL_TYPE, tabs.serializer()),
    vscode.window.registerWebviewViewProvider("pi.chat", new ChatView(context.extensionUri),
                                              { webviewOptions: { retainContextWhenHidden: true } }),
    ...Object.entries({ ...commands, ...chatCommands }).map(([name, run]) => vscode.commands.registerCommand(name, () =>
      run().catch((error: any) => vscode.window.showErrorMessage(`pi: ${error.message ?? error}`)))),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("pi")) restart("the pi settings changed").catch((error) =>
        vscode.window.showErrorMessage(`pi: ${error.message ?? error}`));
    }),
    vscode.window.registerTreeDataProvider("pi.tree", tree),
    ...[["pi.navigate", false], ["pi.navigateWithSummary", true]].map(([name, summarize]) =>
      vscode.commands.registerCommand(name as string, (item?: TreeItem) => goBack(host, item, summarize as boolean)
        .catch((error: any) => vscode.window.showErrorMessage(`pi: ${error.message ?? error}`)))),
    vscode.commands.registerCommand("pi.rewind", (item?: TreeItem) => (item ? rewindTo(host, item.id) : Promise.resolve())
      .catch((error: any) => vscode.window.showErrorMessage(`pi: ${error.message ?? error}`))),
  );
  prestart();
}

// "pi was used in this workspace": the user's own record, this extension's workspaceState, set when the daemon
// first started here for them (opening the chat, a prompt, a pi command). Never read from the folder: a
// repository can commit a .pi/ folder, but not another user's VS Code state.
const USED = "pi.used";
function markUsed(): void {
  if (!context.workspaceState.get(USED)) context.workspaceState.update(USED, true);
}
const usedHere = () => Boolean(context.workspaceState.get(USED) || context.workspaceState.get(CHAT_SESSION));

// A workspace where pi was used opens (activation at startup finished, or by the chat view shown): the daemon
// starts now (in attach mode: connects to the workspace's server, starting it), so the user's first prompt does
// not wait for a spawn; the chat's session is replayed meanwhile, so a run still going (attach mode) is there
// when the page is ready (its "ready" finds it done). Never used here: nothing starts, nothing is read but the
// memento. A Restricted Mode window does not run the extension at all (package.json declares no support for
// untrusted workspaces); isTrusted is checked too, so that stays so should that declaration change.
function prestart(): void {
  if (!usedHere() || !vscode.workspace.isTrusted) return;
  const folders = vscode.workspace.workspaceFolders?.length ?? 0;
  if (folders === 0) return; // a window with no folder: pi would work in the home folder, only when asked
  if (folders > 1 && !context.workspaceState.get("pi.folder")) return; // which one is asked on first use, not now
  ensureClient(true).then(restoreChat).catch((error: any) => output.append(`starting early: ${error.message ?? error}\n`));
}

// The pipe closed and nothing else (no abort, no session/close, no shutdown): a child daemon settles and exits;
// in attach mode the server, its runs and their requests to the user go on for the next window.
export async function deactivate(): Promise<void> {
  await client?.stop();
}
