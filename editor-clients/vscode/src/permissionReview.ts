// The permission requests in VS Code. A `write` or `edit` opens the native diff editor: the file
// now against the text the call would leave (the daemon's `proposed`, computed by its own tool
// code) in an editable pi-proposed: document, where the user can revert some hunks (the diff
// editor's arrows) or type; Accept (in its title bar and in the chat under the call,
// webview/permissionCard.ts) sends that side's text as the request's `content` when it differs
// from the proposal, so what the user kept is what is written. "More…" offers the remembering
// answers with the rule they keep. Answered, the diff and the chat's card go; closed unanswered,
// the request waits (the card stays and opens the diff again, the status bar reminds) until the
// daemon withdraws it. Anything else, or an edit that would fail (no `proposed`), asks in a modal:
// short fixed buttons, the whole command (and whether it runs sandboxed) and the rule in its body.

import * as vscode from "vscode";
import * as nodePath from "path";
import type { ToPage } from "./chatPage";
import { FollowUp, Outcome, PermissionAnswer, PermissionRequest, SandboxState, permissionPrompt, remembers } from "./rpcClient";

const SCHEME = "pi-proposed"; // the proposal, editable (an in-memory file)
const BEFORE = "pi-before"; // the empty left side of a new file
const CONTEXT = "pi.reviewingPermission"; // a proposed change is on screen

interface Pending {
  request: PermissionRequest;
  proposed: string;
  left: vscode.Uri;
  right: vscode.Uri;
  path: string;
  answer(answer: PermissionAnswer): void;
  waiting?: vscode.Disposable; // the status bar's reminder, once the diff was closed unanswered
}

// The modal's answer; "Reject with reason…" and "Edit command…" ask for the words or the command next
// (Escape there shows the modal again).
export async function askModal(request: PermissionRequest, note?: string, sandbox?: SandboxState | null): Promise<PermissionAnswer> {
  const { message, detail, choices } = permissionPrompt(request, sandbox);
  for (;;) {
    const label = await vscode.window.showWarningMessage(message, { modal: true, detail: note ? `${note}\n\n${detail}` : detail },
                                                         ...choices.map((c) => c.label));
    const choice = choices.find((c) => c.label === label);
    if (!choice) return "cancelled";
    const answer = await followUp(request, choice.outcome, choice.follow);
    if (answer) return answer;
  }
}

// The answer a choice gives, after its follow-up; undefined when the user backed out of it.
async function followUp(request: PermissionRequest, outcome: Outcome, follow?: FollowUp): Promise<PermissionAnswer | undefined> {
  if (follow === "reason") {
    const reason = await vscode.window.showInputBox({
      title: `Reject: ${request.title.replace(/\s+/g, " ").slice(0, 80)}`, ignoreFocusOut: true,
      prompt: "Why not? pi reads your words as the answer and goes on.", placeHolder: "e.g. use the test runner instead",
      validateInput: (text) => (text.trim() ? undefined : "Say why, or press Escape to go back"),
    });
    return reason?.trim() ? { outcome, reason: reason.trim() } : undefined;
  }
  if (follow === "edit") {
    const command = String(request.args?.command ?? "");
    const edited = await vscode.window.showInputBox({
      title: "Edit the command pi runs", value: command, ignoreFocusOut: true,
      prompt: "This runs instead of pi's command, checked again by your rules and the sandbox; pi is shown what ran.",
      validateInput: (text) => (text.trim() ? undefined : "The command is empty"),
    });
    if (!edited?.trim()) return undefined;
    return edited === command ? outcome : { outcome, editedArgs: { ...request.args, command: edited } };
  }
  return outcome;
}

// The proposals as files the user may change (and save: it stays here) until the request is answered.
class Proposals implements vscode.FileSystemProvider {
  readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;
  watch(): vscode.Disposable { return new vscode.Disposable(() => undefined); }
  stat(uri: vscode.Uri): vscode.FileStat {
    const file = this.get(uri);
    return { type: vscode.FileType.File, ctime: file.mtime, mtime: file.mtime, size: file.data.length };
  }
  readDirectory(): [string, vscode.FileType][] { return []; }
  createDirectory(): void { throw vscode.FileSystemError.NoPermissions("a proposal is one file"); }
  readFile(uri: vscode.Uri): Uint8Array { return this.get(uri).data; }
  writeFile(uri: vscode.Uri, data: Uint8Array): void {
    this.get(uri); // only a proposal shown
    this.files.set(uri.toString(), { data, mtime: Date.now() });
    this.changed.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }
  delete(uri: vscode.Uri): void { this.files.delete(uri.toString()); }
  rename(): void { throw vscode.FileSystemError.NoPermissions("a proposal keeps its name"); }
  private get(uri: vscode.Uri) {
    const file = this.files.get(uri.toString());
    if (!file) throw vscode.FileSystemError.FileNotFound(uri);
    return file;
  }
}

const ALLOWS: Outcome[] = ["allow_once", "allow_session", "allow_always"];

export class PermissionReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>(); // a pi-before: uri -> its text ("")
  private readonly proposals = new Proposals();
  private readonly pending = new Map<string, Pending>(); // by the proposed (right) side's uri
  private readonly disposables: vscode.Disposable[];

  // `post` sends a message to the chat that shows the session (a tab's, else the side bar's);
  // `sandbox` asks the daemon whether its commands run sandboxed.
  constructor(private readonly workspace: () => string, private readonly post: (sessionId: string, message: ToPage) => void,
              private readonly sandbox: (sessionId: string) => Promise<SandboxState | null | undefined>) {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(BEFORE, this),
      vscode.workspace.registerFileSystemProvider(SCHEME, this.proposals, { isCaseSensitive: true }),
      vscode.commands.registerCommand("pi.permission.accept", (uri?: vscode.Uri) => this.answer(uri, "allow_once")),
      vscode.commands.registerCommand("pi.permission.reject", (uri?: vscode.Uri) => this.answer(uri, "reject_once")),
      vscode.commands.registerCommand("pi.permission.choices", (uri?: vscode.Uri) => this.moreChoices(this.find(uri))),
      vscode.window.tabGroups.onDidChangeTabs((change) => this.closedUnanswered(change.closed)),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  // The answer to a permission request: a diff review for a file change, else the modal.
  async ask(request: PermissionRequest, cancelled: Promise<unknown>): Promise<PermissionAnswer> {
    if (request.toolName === "bash") return askModal(request, undefined, (await this.sandbox(request.sessionId).catch(() => null)) ?? null);
    if (request.toolName !== "write" && request.toolName !== "edit") return askModal(request);
    const proposed = request.proposed;
    if (!proposed) return askModal(request, "(No diff to show: the daemon found this call would fail as it stands.)");
    const path = nodePath.resolve(this.workspace(), proposed.path);
    const shown = "/" + vscode.workspace.asRelativePath(path, false).replace(/^\/+/, "");
    // a subagent's session may use the same call ids as its parent's
    const query = `session=${encodeURIComponent(request.sessionId)}&call=${encodeURIComponent(request.toolCallId)}`;
    const right = vscode.Uri.from({ scheme: SCHEME, path: shown, query });
    const left = proposed.exists ? vscode.Uri.file(path) : vscode.Uri.from({ scheme: BEFORE, path: shown, query });
    this.proposals.files.set(right.toString(), { data: new TextEncoder().encode(proposed.text), mtime: Date.now() });
    if (!proposed.exists) this.texts.set(left.toString(), "");
    const outcome = new Promise<PermissionAnswer>((resolve) => {
      this.pending.set(right.toString(), { request, proposed: proposed.text, left, right, path: shown.slice(1), answer: resolve });
    });
    cancelled.then(() => this.settle(right, "cancelled"));
    const p = this.pending.get(right.toString())!;
    await this.show(p);
    if (this.pending.has(right.toString())) this.post(request.sessionId, { type: "permission", ask: this.askOf(p) });
    else this.closeDiff(p); // withdrawn while the diff opened: settle found no diff to close
    return outcome;
  }

  private async show(p: Pending): Promise<void> {
    p.waiting?.dispose();
    p.waiting = undefined;
    const verb = p.request.toolName === "write" ? "write" : "edit";
    await vscode.commands.executeCommand("vscode.diff", p.left, p.right, `${p.path}: pi's proposed ${verb} (yours to change)`,
                                         { preview: false });
    vscode.commands.executeCommand("setContext", CONTEXT, true);
  }

  private askOf(p: Pending) {
    return { sessionId: p.request.sessionId, toolCallId: p.request.toolCallId, toolName: p.request.toolName, path: p.path };
  }

  // A chat opened (again): the requests still waiting in the sessions it shows.
  repost(shows: (sessionId: string) => boolean, post: (message: ToPage) => void): void {
    for (const p of this.pending.values()) if (shows(p.request.sessionId)) post({ type: "permission", ask: this.askOf(p) });
  }

  // A click in the chat's card: accept, reject (with the user's reason when given), stop, choices, show.
  fromChat(sessionId: string, toolCallId: string, answer: string, reason?: string): void {
    const p = [...this.pending.values()].find((x) => x.request.sessionId === sessionId && x.request.toolCallId === toolCallId);
    if (!p) return;
    if (answer === "accept") this.settle(p.right, "allow_once");
    else if (answer === "reject") this.settle(p.right, reason ? { outcome: "reject_once", reason } : "reject_once");
    else if (answer === "stop") this.settle(p.right, "reject_and_stop");
    else if (answer === "choices") this.moreChoices(p);
    else if (answer === "show") this.show(p);
  }

  private find(uri?: vscode.Uri): Pending | undefined {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    return (target && this.pending.get(target.toString())) ?? [...this.pending.values()].pop();
  }

  private answer(uri: vscode.Uri | undefined, outcome: Outcome): void {
    const p = this.find(uri);
    if (p) this.settle(p.right, outcome);
  }

  // Every answer the request offers, the remembering ones with the rule they keep.
  private async moreChoices(p: Pending | undefined): Promise<void> {
    if (!p) return;
    const { choices } = permissionPrompt(p.request);
    const pick = await vscode.window.showQuickPick(choices.map((c) => ({
      label: c.label, outcome: c.outcome, follow: c.follow,
      detail: remembers(c.outcome) && p.request.remember ? `remembers: ${p.request.remember.label}` : undefined,
    })), { placeHolder: `${p.request.title}: your answer` });
    const answer = pick && (await followUp(p.request, pick.outcome, pick.follow));
    if (answer) this.settle(p.right, answer);
  }

  // The answer given (or the request withdrawn): an allow carries the right side's text when the user
  // changed it (hunks reverted, typed); the diff closes and the documents go.
  private settle(right: vscode.Uri, answer: PermissionAnswer): void {
    const p = this.pending.get(right.toString());
    if (!p) return;
    this.pending.delete(right.toString());
    const kept = this.rightText(p);
    const given = typeof answer === "string" ? { outcome: answer } : answer;
    p.answer(ALLOWS.includes(given.outcome) && kept !== p.proposed ? { ...given, content: kept } : answer);
    p.waiting?.dispose();
    this.post(p.request.sessionId, { type: "permissionDone", sessionId: p.request.sessionId, toolCallId: p.request.toolCallId });
    this.closeDiff(p);
  }

  // The right side as the user left it: its open document (saved or not), else the proposal's file.
  private rightText(p: Pending): string {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === p.right.toString());
    const file = this.proposals.files.get(p.right.toString());
    return open ? open.getText() : file ? new TextDecoder().decode(file.data) : p.proposed;
  }

  private async closeDiff(p: Pending): Promise<void> {
    const right = p.right.toString();
    // changed and unsaved, closing would ask to save it: it is saved into its in-memory file first
    await vscode.workspace.textDocuments.find((d) => d.uri.toString() === right && d.isDirty)?.save();
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) =>
      t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === right);
    vscode.window.tabGroups.close(tabs).then(() => {
      this.proposals.files.delete(right);
      this.texts.delete(p.left.toString());
    });
    if (!this.pending.size) vscode.commands.executeCommand("setContext", CONTEXT, false);
  }

  // A review closed without an answer: the request still waits (its card in the chat brings the
  // diff back); the status bar says so until it is answered or withdrawn.
  private closedUnanswered(closed: readonly vscode.Tab[]): void {
    for (const tab of closed) {
      if (!(tab.input instanceof vscode.TabInputTextDiff)) continue;
      const p = this.pending.get(tab.input.modified.toString());
      if (!p || p.waiting) continue;
      p.waiting = vscode.window.setStatusBarMessage(
        `$(warning) pi waits for your answer to its ${p.request.toolName} of ${p.path} (in the chat, or pi: Accept / Reject)`);
    }
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
