// The VS Code extension: a chat view on the pi-daemon, sessions, pickers and permissions.
// All protocol work is in rpcClient.ts; this file is only the VS Code surface.

import * as vscode from "vscode";
import { registerReview, reportDirty, vscodeFiles } from "./changesView";
import { fsHandlers } from "./editorFs";
import { Conversation, Json, Outcome, PiClient, PermissionRequest, WorkspaceTrustRequest, permissionPrompt } from "./rpcClient";

let client: PiClient | undefined;
let conversation = new Conversation();
let view: vscode.WebviewView | undefined;
let status: vscode.StatusBarItem;
let output: vscode.OutputChannel;
const diffs = new Map<string, string>();
let queued: { id: string; text: string; kind: string }[] = []; // what this window queued, for "remove"

function render(): void {
  view?.webview.postMessage({
    type: "state",
    messages: conversation.messages,
    tools: Object.fromEntries(conversation.tools),
    queue: queued.filter((q) => (q.kind === "steer" ? conversation.queue.steering : conversation.queue.followUp).includes(q.text)),
    busy: conversation.busy,
  });
}

async function refreshStatus(): Promise<void> {
  try {
    const stats = await client!.request("session/stats");
    const state = await client!.request("getState");
    const model = state.model ? `${state.model.provider}/${state.model.id}` : "no model";
    const context = stats.contextPercent == null ? "" : ` · ${stats.contextPercent}% context`;
    status.text = `π ${model} · ${stats.tokens.total} tok · $${stats.cost.toFixed(4)}${context}`;
    status.show();
  } catch (error) {
    status.text = "π (not running)";
  }
}

async function askPermission(request: PermissionRequest): Promise<Outcome> {
  const { detail, choices } = permissionPrompt(request);
  const choice = await vscode.window.showWarningMessage(request.title, { modal: true, detail }, ...choices.map((c) => c.label));
  return choices.find((c) => c.label === choice)?.outcome ?? "cancelled";
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

function onEvent(_sessionId: string, event: Json): void {
  conversation.apply(event);
  if (event.type === "tool_execution_end" && event.result?.details?.diff) {
    diffs.set(event.toolCallId, event.result.details.diff);
    const path = event.result.details.path as string;
    vscode.window.showInformationMessage(`pi changed ${path}`, "Show diff").then((choice) => {
      if (choice) showDiff(event.toolCallId);
    });
  }
  if (event.type === "permission_timeout") {
    vscode.window.showWarningMessage(`pi: nobody answered within ${event.timeoutSeconds} s, so ${event.toolName} was not run`);
  }
  if (event.type === "agent_settled") refreshStatus();
  render();
}

async function showDiff(toolCallId: string): Promise<void> {
  const document = await vscode.workspace.openTextDocument({ content: diffs.get(toolCallId) ?? "", language: "diff" });
  await vscode.window.showTextDocument(document, { preview: true });
}

async function send(text: string): Promise<void> {
  if (!text.trim()) return;
  if (!conversation.busy) {
    await client!.prompt(text);
    return;
  }
  const pick = await vscode.window.showQuickPick(
    [{ label: "Steer", description: "after the current tool calls", value: "steer" },
     { label: "Follow up", description: "when the agent is done", value: "followUp" }],
    { placeHolder: "The agent is working. Send this as…" });
  if (!pick) return;
  const result = await client!.prompt(text, pick.value as "steer" | "followUp");
  if (result.queueId) queued.push({ id: result.queueId, text, kind: pick.value === "steer" ? "steer" : "followUp" });
  render();
}

async function redraw(sessionId: string): Promise<void> {
  conversation = new Conversation();
  render();
  await client!.request("session/load", { sessionId, replay: true });
  refreshStatus();
}

async function pickSession(placeHolder: string): Promise<Json | undefined> {
  const { sessions } = await client!.request("session/list");
  const items = sessions.map((s: Json) => ({
    label: s.name || s.firstMessage || "(empty)", description: `${s.messageCount} messages`, detail: s.updatedAt, s,
  }));
  return (await vscode.window.showQuickPick(items, { placeHolder }) as Json)?.s;
}

const commands: Record<string, () => Promise<void>> = {
  "pi.newSession": async () => {
    await client!.request("session/new");
    conversation = new Conversation();
    render();
  },
  "pi.resumeSession": async () => {
    const session = await pickSession("Resume which session?");
    if (session) await redraw(session.sessionId);
  },
  "pi.forkSession": async () => {
    const { entries } = await client!.request("session/entries");
    const users = entries.filter((e: Json) => e.type === "message" && e.message?.role === "user");
    const pick = await vscode.window.showQuickPick(
      users.map((e: Json) => ({ label: String(typeof e.message.content === "string" ? e.message.content : "(image)").slice(0, 80), id: e.id })),
      { placeHolder: "Fork from which message?" });
    if (!pick) return;
    const forked = await client!.request("session/fork", { entryId: (pick as Json).id });
    await redraw(forked.sessionId);
    view?.webview.postMessage({ type: "input", text: forked.text });
  },
  "pi.renameSession": async () => {
    const name = await vscode.window.showInputBox({ prompt: "Session name" });
    if (name !== undefined) await client!.request("session/setName", { name });
  },
  "pi.deleteSession": async () => {
    const session = await pickSession("Delete which session?");
    if (session && (await vscode.window.showWarningMessage("Delete this session?", { modal: true }, "Delete")))
      await client!.request("session/delete", { sessionId: session.sessionId, file: session.file });
  },
  "pi.abort": async () => {
    await client!.abort();
  },
  "pi.selectModel": async () => {
    const { models, unavailable } = await client!.request("listModels");
    const items = models.map((m: Json) => ({ label: `${m.provider}/${m.id}`, description: m.name, m }));
    for (const u of unavailable) items.push({ label: `${u.provider}/…`, description: u.reason, m: undefined });
    const pick = (await vscode.window.showQuickPick(items, { placeHolder: "Model" })) as Json;
    if (pick?.m) await client!.request("setModel", { provider: pick.m.provider, modelId: pick.m.id });
    refreshStatus();
  },
  "pi.selectThinking": async () => {
    const level = await vscode.window.showQuickPick(["off", "minimal", "low", "medium", "high", "xhigh"]);
    if (level) await client!.request("setThinkingLevel", { level });
  },
  "pi.showLog": async () => output.show(),
};

class ChatView implements vscode.WebviewViewProvider {
  constructor(private readonly extensionUri: vscode.Uri) {}

  resolveWebviewView(webviewView: vscode.WebviewView): void {
    view = webviewView;
    webviewView.webview.options = { enableScripts: true };
    webviewView.webview.html = chatHtml();
    webviewView.webview.onDidReceiveMessage(async (message) => {
      try {
        if (message.type === "send") await send(message.text);
        else if (message.type === "abort") await client!.abort();
        else if (message.type === "removeQueued") await client!.request("removeQueued", { queueId: message.queueId });
        else if (message.type === "diff") await showDiff(message.toolCallId);
        else if (message.type === "ready") render();
      } catch (error: any) {
        vscode.window.showErrorMessage(`pi: ${error.message ?? error}`);
      }
    });
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("pi-daemon");
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  status.command = "pi.selectModel";
  const config = vscode.workspace.getConfiguration("pi");
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  const args = [...config.get<string[]>("args", []), "--log-level", config.get("logLevel", "warning")];
  const model = config.get<string>("model", "");
  if (model) args.push("--model", model);
  client = new PiClient({
    command: config.get("command", "pi-daemon"), args, cwd: folder,
    onLog: (text) => output.append(text), onPermission: askPermission,
    onWorkspaceTrust: askWorkspaceTrust, fs: fsHandlers(vscodeFiles),
  });
  context.subscriptions.push(reportDirty(client));
  registerReview(context, client);
  client.onEvent(onEvent);
  client.onRestart(() => vscode.window.showWarningMessage("pi-daemon stopped and was restarted; resume your session from the list."));
  context.subscriptions.push(
    output, status,
    vscode.window.registerWebviewViewProvider("pi.chat", new ChatView(context.extensionUri)),
    ...Object.entries(commands).map(([name, run]) => vscode.commands.registerCommand(name, () =>
      run().catch((error: any) => vscode.window.showErrorMessage(`pi: ${error.message ?? error}`)))),
  );
  try {
    await client.start();
    refreshStatus();
  } catch (error: any) {
    vscode.window.showErrorMessage(`pi-daemon did not start: ${error.message ?? error}`);
  }
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

function chatHtml(): string {
  return `<!doctype html><html><head><meta charset="utf-8"><style>
body{font-family:var(--vscode-font-family);font-size:var(--vscode-font-size);padding:0 8px}
.m{margin:8px 0;white-space:pre-wrap;word-wrap:break-word}.user{color:var(--vscode-textLink-foreground)}
.error{color:var(--vscode-errorForeground)}details{opacity:.8}pre{background:var(--vscode-textCodeBlock-background);padding:4px;overflow:auto}
#queue li{cursor:pointer}#bar{position:sticky;bottom:0;background:var(--vscode-sideBar-background);padding:6px 0}
textarea{width:100%;min-height:3em}</style></head><body>
<div id="log"></div><ul id="queue"></ul>
<div id="bar"><textarea id="input" placeholder="Ask pi… (Enter sends, Shift+Enter new line)"></textarea>
<button id="stop" disabled>Stop</button></div>
<script>
const vscode = acquireVsCodeApi();
const esc = (s) => String(s ?? "").replace(/[&<>]/g, (c) => ({"&":"&amp;","<":"&lt;",">":"&gt;"}[c]));
const input = document.getElementById("input"), log = document.getElementById("log");
input.addEventListener("keydown", (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault();
  vscode.postMessage({type: "send", text: input.value}); input.value = ""; } });
document.getElementById("stop").onclick = () => vscode.postMessage({type: "abort"});
window.addEventListener("message", ({data}) => {
  if (data.type === "input") { input.value = data.text; input.focus(); return; }
  if (data.type !== "state") return;
  document.getElementById("stop").disabled = !data.busy;
  log.innerHTML = data.messages.map((m) => {
    const parts = m.blocks.map((b) => b.type === "thinking" ? "<details><summary>thinking</summary>" + esc(b.thinking) + "</details>"
      : b.type === "toolCall" ? "<details open><summary>" + esc(b.name) + "</summary><pre>" + esc(JSON.stringify(b.arguments ?? b.text, null, 2))
        + "</pre><pre>" + esc((data.tools[b.id] || {}).output) + "</pre></details>"
      : esc(b.text)).join("");
    const cls = "m " + m.role + (m.isError || m.stopReason === "error" ? " error" : "");
    const error = m.errorMessage ? "<div class=error>" + esc(m.errorMessage) + "</div>" : "";
    return m.role === "toolResult" ? "" : "<div class='" + cls + "'>" + parts + error + "</div>";
  }).join("");
  document.getElementById("queue").innerHTML = data.queue.map((q) =>
    "<li title='click to remove' data-id='" + esc(q.id) + "'>" + esc(q.kind) + ": " + esc(q.text) + " ✕</li>").join("");
  for (const li of document.querySelectorAll("#queue li"))
    li.onclick = () => vscode.postMessage({type: "removeQueued", queueId: li.dataset.id});
  window.scrollTo(0, document.body.scrollHeight);
});
vscode.postMessage({type: "ready"});
</script></body></html>`;
}
