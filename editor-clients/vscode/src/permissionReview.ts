// The permission requests in VS Code. A `write` or `edit` opens the native diff editor, the
// file now against what the call would leave (a read-only pi-proposed: document), with Accept /
// Reject in its title bar and in the chat under the call (webview/permissionCard.ts); "More…"
// offers the remembering answers with the rule they keep. Answered, the diff and the chat's
// card go; closed unanswered, the request waits (the card stays and opens the diff again, the
// status bar reminds) until the daemon withdraws it. Anything else, or
// an edit whose result cannot be computed, asks in a modal: short fixed buttons, the whole
// command and the rule in its body.

import * as vscode from "vscode";
import * as nodePath from "path";
import { Json, Outcome, PermissionRequest, permissionPrompt } from "./rpcClient";
import { proposedText } from "./proposedEdit";

const SCHEME = "pi-proposed";
const CONTEXT = "pi.reviewingPermission"; // a proposed change is on screen

interface Pending {
  request: PermissionRequest;
  left: vscode.Uri;
  right: vscode.Uri;
  path: string;
  answer(outcome: Outcome): void;
  waiting?: vscode.Disposable; // the status bar's reminder, once the diff was closed unanswered
}

export async function askModal(request: PermissionRequest, note?: string): Promise<Outcome> {
  const { message, detail, choices } = permissionPrompt(request);
  const choice = await vscode.window.showWarningMessage(message, { modal: true, detail: note ? `${note}\n\n${detail}` : detail },
                                                        ...choices.map((c) => c.label));
  return choices.find((c) => c.label === choice)?.outcome ?? "cancelled";
}

export class PermissionReview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>(); // a pi-proposed: uri -> its text
  private readonly pending = new Map<string, Pending>(); // by the proposed (right) side's uri
  private readonly disposables: vscode.Disposable[];

  // `post` sends a message to the chat that shows the session (a tab's, else the side bar's).
  constructor(private readonly workspace: () => string, private readonly post: (sessionId: string, message: Json) => void) {
    this.disposables = [
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
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
  async ask(request: PermissionRequest, cancelled: Promise<unknown>): Promise<Outcome> {
    if (request.toolName !== "write" && request.toolName !== "edit") return askModal(request);
    const path = nodePath.resolve(this.workspace(), String(request.args?.path ?? ""));
    const current = await this.currentText(path);
    const proposed = proposedText(request.toolName, request.args, current);
    if ("error" in proposed) return askModal(request, `(No diff to show: ${proposed.error}.)`);
    const shown = "/" + vscode.workspace.asRelativePath(path, false).replace(/^\/+/, "");
    // a subagent's session may use the same call ids as its parent's
    const query = `session=${encodeURIComponent(request.sessionId)}&call=${encodeURIComponent(request.toolCallId)}`;
    const right = vscode.Uri.from({ scheme: SCHEME, path: shown, query });
    const left = current === undefined ? vscode.Uri.from({ scheme: SCHEME, path: shown, query: `${query}&before` })
      : vscode.Uri.file(path);
    this.texts.set(right.toString(), proposed.text);
    if (current === undefined) this.texts.set(left.toString(), "");
    const outcome = new Promise<Outcome>((resolve) => {
      this.pending.set(right.toString(), { request, left, right, path: shown.slice(1), answer: resolve });
    });
    cancelled.then(() => this.settle(right, "cancelled"));
    const p = this.pending.get(right.toString())!;
    await this.show(p);
    if (this.pending.has(right.toString())) this.post(request.sessionId, { type: "permission", ask: this.askOf(p) });
    else this.closeDiff(p); // withdrawn while the file was read or the diff opened: settle found no diff to close
    return outcome;
  }

  private async currentText(path: string): Promise<string | undefined> {
    const open = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    if (open) return open.getText();
    try {
      return new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(path)));
    } catch {
      return undefined; // a new file
    }
  }

  private async show(p: Pending): Promise<void> {
    p.waiting?.dispose();
    p.waiting = undefined;
    const verb = p.request.toolName === "write" ? "write" : "edit";
    await vscode.commands.executeCommand("vscode.diff", p.left, p.right, `${p.path}: pi's proposed ${verb} (review)`,
                                         { preview: false });
    vscode.commands.executeCommand("setContext", CONTEXT, true);
  }

  private askOf(p: Pending) {
    return { sessionId: p.request.sessionId, toolCallId: p.request.toolCallId, toolName: p.request.toolName, path: p.path };
  }

  // A chat opened (again): the requests still waiting in the sessions it shows.
  repost(shows: (sessionId: string) => boolean, post: (message: Json) => void): void {
    for (const p of this.pending.values()) if (shows(p.request.sessionId)) post({ type: "permission", ask: this.askOf(p) });
  }

  // A click in the chat's card: accept, reject, choices, show.
  fromChat(sessionId: string, toolCallId: string, answer: string): void {
    const p = [...this.pending.values()].find((x) => x.request.sessionId === sessionId && x.request.toolCallId === toolCallId);
    if (!p) return;
    if (answer === "accept") this.settle(p.right, "allow_once");
    else if (answer === "reject") this.settle(p.right, "reject_once");
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
    const remembers = (o: Outcome) => o !== "allow_once" && o !== "reject_once";
    const pick = await vscode.window.showQuickPick(choices.map((c) => ({
      label: c.label, outcome: c.outcome,
      detail: remembers(c.outcome) && p.request.remember ? `remembers: ${p.request.remember.label}` : undefined,
    })), { placeHolder: `${p.request.title}: your answer` });
    if (pick) this.settle(p.right, pick.outcome);
  }

  // The answer given (or the request withdrawn): the diff closes and the documents go.
  private settle(right: vscode.Uri, outcome: Outcome): void {
    const p = this.pending.get(right.toString());
    if (!p) return;
    this.pending.delete(right.toString());
    p.answer(outcome);
    p.waiting?.dispose();
    this.post(p.request.sessionId, { type: "permissionDone", sessionId: p.request.sessionId, toolCallId: p.request.toolCallId });
    this.closeDiff(p);
  }

  private closeDiff(p: Pending): void {
    const right = p.right.toString();
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs).filter((t) =>
      t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === right);
    vscode.window.tabGroups.close(tabs).then(() => {
      this.texts.delete(right);
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
