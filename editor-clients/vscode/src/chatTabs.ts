// Chats in editor tabs (issue #29): each tab is a WebviewPanel bound to one session of the daemon,
// which serves many at once; events are routed to the tab of their sessionId (a subagent's to the
// tab of its parent). The page is the side bar's (chatHtml.ts, webview/), so a conversation is
// drawn by the same code in both. The side bar's chat stays the daemon's *current* session: a tab
// names its session in every request, and after it creates or loads one the side bar's is made
// current again (keepingCurrent).

import * as vscode from "vscode";
import { Conversation, PiClient, isRole } from "./rpcClient";
import type { AgentEvent, CommandInfo, ContextItem, Image, UserContent } from "./protocol";
import type { FromPage, ToPage, TranscriptEvent, TranscriptItem } from "./chatPage";
import { chatHtml, newNonce } from "./chatHtml";
import { SubagentRouter, childEvents, isStored, storedSubagents } from "./subagents";
import { ChatHost, executePlan, rewindTo, setMode } from "./sessionActions";
import { tabTitle } from "./history";
import { compactionSaid } from "./compactReply";

export const PANEL_TYPE = "pi.chatTab";

const textOf = (content: string | UserContent[]): string | undefined =>
  typeof content === "string" ? content : (content ?? []).find((b) => b.type === "text")?.text;

// A user's message starting: the first words of the tab's title.
const userText = (event: TranscriptEvent): string | undefined =>
  event.type === "message_start" && isRole(event.message, "user") ? textOf(event.message.content) : undefined;

// What the tabs need of the extension.
export interface TabsHost {
  client(): Promise<PiClient>;
  extensionUri: vscode.Uri;
  // The messages every chat handles alike (files for "@", copy, a diff, a subagent's session …);
  // true when it was one of them.
  shared(message: FromPage, post: (message: ToPage) => void): Promise<boolean>;
  commands(): CommandInfo[]; // the slash commands, for "/" completion
  // "Send as steering or follow-up?" while the agent works; undefined: the user dismissed it.
  askQueueKind(): Promise<"steer" | "followUp" | undefined>;
  sidebar(): { sessionId?: string; events: TranscriptItem[] }; // the side bar chat's session and its events so far
  permissions(shows: (sessionId: string) => boolean, post: (message: ToPage) => void): void; // the reviews waiting there
}

// Runs `change` (which may make another session current) and makes the current session current again.
async function keepingCurrent<T>(client: PiClient, change: () => Promise<T>): Promise<T> {
  const { sessionId } = await client.request("getState"); // creates one when there is none, so the side bar keeps its own
  try {
    return await change();
  } finally {
    await client.request("session/load", { sessionId }).catch(() => undefined);
  }
}

class ChatTab implements ChatHost {
  conversation = new Conversation();
  transcript: TranscriptItem[] = []; // the events so far, without deltas, to fill the page when it (re)loads
  readonly subagents = new SubagentRouter();
  private titled = false; // the title is set: the session's name or first message (a name replaces it)

  constructor(readonly panel: vscode.WebviewPanel, public sessionId: string, private readonly tabs: ChatTabs) {}

  client(): Promise<PiClient> {
    return this.tabs.host.client();
  }

  // A request on the tab's session; a daemon started again since (it answers -32002, the session is
  // not open there) opens the session and is asked again, so the tab goes on with its conversation.
  private async onSession<T>(request: (client: PiClient) => Promise<T>): Promise<T> {
    const client = await this.client();
    try {
      return await request(client);
    } catch (error: any) {
      if (error?.code !== -32002) throw error;
      await keepingCurrent(client, () => client.request("session/load", { sessionId: this.sessionId }));
      return request(client);
    }
  }

  // Its session or one of that session's subagents.
  shows(sessionId: string): boolean {
    return this.sessionId === sessionId || this.subagents.children.has(sessionId);
  }

  post(message: ToPage): void {
    this.panel.webview.postMessage(message);
  }

  setTitle(title: string | undefined, named = false): void {
    if (!title || (this.titled && !named)) return;
    this.titled = true;
    this.panel.title = tabTitle(title);
  }

  reset(): void {
    this.conversation = new Conversation();
    this.transcript = [];
    this.subagents.clear();
    this.post({ type: "reset" });
    this.post({ type: "busy", busy: false });
    this.post({ type: "session", sessionId: this.sessionId });
  }

  apply(sessionId: string, event: AgentEvent): void {
    const delta = event.type === "message_update" || event.type === "tool_execution_update";
    if (sessionId !== this.sessionId) { // one of its subagents
      if (!delta) this.transcript.push({ child: sessionId, event });
      this.post({ type: "subevent", sessionId, event });
      return;
    }
    this.subagents.route(sessionId, event);
    this.conversation.apply(event);
    if (!delta) this.transcript.push(event);
    this.post({ type: "event", event });
    this.setTitle(userText(event));
    if (event.type === "session_info_changed") this.setTitle(event.name, true);
    if (event.type === "queue_update") this.postQueue();
    if (event.type === "agent_start" || event.type === "agent_settled") this.post({ type: "busy", busy: this.conversation.busy });
  }

  private postQueue(): void {
    this.post({ type: "queue", items: this.conversation.queue.items.map((q) => ({ id: q.queueId, text: q.text, kind: q.kind })) });
  }

  // The tab's session drawn again from its file (after a rewind, or when it is opened).
  async redraw(sessionId: string, reveal?: { query: string; entryId?: string }): Promise<void> {
    this.sessionId = sessionId;
    this.reset();
    this.pendingReveal = reveal;
    this.replaying = true;
    const client = await this.client();
    const loaded = await keepingCurrent(client, () => client.load(sessionId));
    if (loaded.state.isStreaming && !this.conversation.busy) { // a run going on (a shared server's): shown as going
      this.conversation.busy = true;
      this.post({ type: "busy", busy: true });
    }
    const { entries } = await client.request("session/entries", { sessionId, scope: "file" });
    const stored = storedSubagents(entries);
    this.transcript.push(...stored);
    if (stored.length) this.post({ type: "events", events: stored });
    const state = await client.request("getState", { sessionId });
    this.post({ type: "mode", mode: state.mode ?? "ask" });
  }

  // A History match is shown once the page is there and the replay (events after session/load's
  // answer) has drawn the conversation.
  pendingReveal?: { query: string; entryId?: string };
  private replaying = false;
  private pageReady = false;

  replayEnded(): void {
    this.replaying = false;
    this.showPendingReveal();
  }

  private showPendingReveal(): void {
    if (!this.pendingReveal || this.replaying || !this.pageReady) return;
    this.post({ type: "reveal", ...this.pendingReveal });
    this.pendingReveal = undefined;
  }

  async send(text: string, context?: ContextItem[], images?: Image[]): Promise<void> {
    if (!text.trim() && !images?.length) return;
    if (text.trim() === "/new") return this.tabs.openNew(); // a new chat is a new tab
    let behaviour: "steer" | "followUp" | undefined;
    if (this.conversation.busy) {
      behaviour = await this.tabs.host.askQueueKind();
      if (!behaviour) {
        this.post({ type: "input", text }); // not sent: the text goes back
        return;
      }
    }
    const result = await this.onSession((client) => {
      const prompt = () => client.prompt(text, behaviour, this.sessionId, context, images);
      // a built-in command may make another session current: the side bar's stays its own
      return text.startsWith("/") ? keepingCurrent(client, prompt) : prompt();
    }).catch((error) => {
      if (compactionSaid(text, error, this.transcript)) return undefined; // the chat's line says why
      this.post({ type: "input", text }); // not sent: the text is not lost
      throw error;
    });
    if (result?.disposition === "command") vscode.window.setStatusBarMessage(`pi: /${result.command?.name} done`, 3000);
    this.postQueue();
  }

  async onMessage(message: FromPage): Promise<void> {
    if (await this.tabs.host.shared(message, (m) => this.post(m))) return;
    if (message.type === "send") await this.send(message.text, message.context, message.images);
    else if (message.type === "abort") await this.onSession((client) => client.abort(this.sessionId));
    else if (message.type === "removeQueued")
      await this.onSession((client) => client.request("removeQueued", { queueId: message.queueId, sessionId: this.sessionId }));
    else if (message.type === "rewind") await rewindTo(this, message.entryId);
    else if (message.type === "setMode") await setMode(this, message.mode);
    else if (message.type === "executePlan") await executePlan(this, message.mode);
    else if (message.type === "ready") {
      this.post({ type: "reset" });
      this.post({ type: "session", sessionId: this.sessionId });
      this.post({ type: "events", events: this.transcript });
      this.postQueue();
      this.post({ type: "busy", busy: this.conversation.busy });
      this.post({ type: "commands", commands: this.tabs.host.commands() });
      this.pageReady = true;
      this.showPendingReveal();
      this.tabs.host.permissions((sessionId) => this.shows(sessionId), (m) => this.post(m));
      const state = await this.onSession((client) => client.request("getState", { sessionId: this.sessionId }));
      this.post({ type: "mode", mode: state.mode ?? "ask" });
    }
  }
}

export class ChatTabs {
  private readonly tabs = new Set<ChatTab>();

  constructor(readonly host: TabsHost) {}

  private tabOf(sessionId: string): ChatTab | undefined {
    for (const tab of this.tabs) if (tab.shows(sessionId)) return tab;
    return undefined;
  }

  // Whether a tab shows this session (or one of its subagents).
  owns(sessionId: string): boolean {
    return this.tabOf(sessionId) !== undefined;
  }

  // Sends the message to the tab that shows the session; false when none does.
  post(sessionId: string, message: ToPage): boolean {
    const tab = this.tabOf(sessionId);
    tab?.post(message);
    return tab !== undefined;
  }

  postAll(message: ToPage): void {
    for (const tab of this.tabs) tab.post(message);
  }

  // Draws the event in the tabs that show its session (a subagent's: its parent's tab, and its own
  // when it was opened); false when none does.
  route(sessionId: string, event: AgentEvent): boolean {
    const shown = [...this.tabs].filter((t) => t.shows(sessionId));
    for (const tab of shown) {
      if (event.type === "replay_end") tab.replayEnded();
      tab.apply(sessionId, event);
    }
    return shown.length > 0;
  }

  // A subagent's events drawn so far in the tab of its parent; undefined when no tab has it.
  childEvents(sessionId: string): AgentEvent[] | undefined {
    const parent = [...this.tabs].find((t) => t.sessionId !== sessionId && t.subagents.children.has(sessionId));
    return parent && childEvents(parent.transcript, sessionId);
  }

  private create(sessionId: string, title: string, restored?: vscode.WebviewPanel): ChatTab {
    const dist = vscode.Uri.joinPath(this.host.extensionUri, "dist");
    const panel = restored ?? vscode.window.createWebviewPanel(PANEL_TYPE, tabTitle(title), vscode.ViewColumn.Active,
      { enableScripts: true, localResourceRoots: [dist], retainContextWhenHidden: true });
    panel.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    panel.iconPath = vscode.Uri.joinPath(this.host.extensionUri, "media", "pi.svg");
    panel.webview.html = chatHtml({
      cspSource: panel.webview.cspSource, nonce: newNonce(), surface: "tab",
      scriptUri: panel.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
    });
    const tab = new ChatTab(panel, sessionId, this);
    this.tabs.add(tab);
    panel.onDidDispose(() => this.tabs.delete(tab));
    panel.webview.onDidReceiveMessage((message: FromPage) => tab.onMessage(message).catch((error: any) =>
      vscode.window.showErrorMessage(`pi: ${error.message ?? error}`)));
    return tab;
  }

  // The tabs of a window reopened (VS Code keeps a tab's state: its page's sessionId), each drawn
  // again from its session.
  serializer(): vscode.WebviewPanelSerializer {
    return {
      deserializeWebviewPanel: async (panel, state: { sessionId?: string } | undefined) => {
        if (!state?.sessionId) return panel.dispose(); // a tab that never had a session: nothing to show
        const tab = this.create(state.sessionId, panel.title, panel);
        tab.setTitle(panel.title);
        await tab.redraw(state.sessionId).catch((error: any) => {
          tab.post({ type: "reset" });
          vscode.window.showErrorMessage(`pi: the chat "${panel.title}" could not be opened again: ${error.message ?? error}`);
        });
      },
    };
  }

  // A new session in a new tab.
  async openNew(): Promise<void> {
    const client = await this.host.client();
    const { sessionId } = await keepingCurrent(client, () => client.request("session/new"));
    this.create(sessionId, "new chat");
  }

  // A stored session in a tab (the one already showing it, if any), its match shown when given.
  async open(sessionId: string, title: string, reveal?: { query: string; entryId?: string }): Promise<void> {
    const shown = [...this.tabs].find((t) => t.sessionId === sessionId);
    if (shown) {
      shown.panel.reveal();
      if (reveal) shown.post({ type: "reveal", ...reveal });
      return;
    }
    const sidebar = this.host.sidebar();
    if (sidebar.sessionId === sessionId) { // drawn from the side bar's events: a replay would draw it twice there
      const tab = this.openCurrent(sessionId, title, sidebar.events);
      tab.pendingReveal = reveal;
      return;
    }
    const tab = this.create(sessionId, title);
    tab.setTitle(title);
    await tab.redraw(sessionId, reveal);
  }

  // The side bar's conversation moved to a tab: it goes on in both, drawn from the events so far.
  openCurrent(sessionId: string, title: string | undefined, events: TranscriptItem[]): ChatTab {
    const shown = [...this.tabs].find((t) => t.sessionId === sessionId);
    if (shown) {
      shown.panel.reveal();
      return shown;
    }
    const tab = this.create(sessionId, title || "chat");
    tab.setTitle(title);
    for (const e of events) {
      if ("child" in e) tab.transcript.push(e);
      else {
        tab.subagents.route(sessionId, e);
        if (!isStored(e)) tab.conversation.apply(e);
        tab.transcript.push(e);
        tab.setTitle(userText(e));
      }
    }
    return tab;
  }

  // The daemon died and was started again: a run it was doing is over (its sessions open again on
  // the tabs' next requests, onSession).
  daemonRestarted(): void {
    for (const tab of this.tabs) {
      tab.conversation.busy = false;
      tab.post({ type: "busy", busy: false });
    }
  }

  // The tab in front, if it is a chat (for New and History on its title bar).
  active(): ChatTab | undefined {
    return [...this.tabs].find((t) => t.panel.active);
  }
}
