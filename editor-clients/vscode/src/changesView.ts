// VS Code as the agent's file system and review surface (the protocol side is editorFs.ts):
// open documents answer fs/readTextFile, agent edits go through workspace.applyEdit (undoable,
// unsaved), the Changes view lists a run's files and hunks with Accept / Revert, a file opens
// in the native diff editor against its text before the run (whose title bar accepts or
// reverts the hunk at the cursor, as does a changed file's own editor); selectionContext is
// what "Send selection to pi" sends as editor context.

import * as vscode from "vscode";
import { choose, DirtyReporter, FsHost, Hunk, pending, Review, RevertResult, revertQuestion, revertReport, toReview, uriPath } from "./editorFs";
import type { ContextItem, WorkspaceEdit } from "./protocol";
import type { PiClient } from "./rpcClient";

const BEFORE = "pi-before";

// The LSP WorkspaceEdit the daemon sends, as a vscode.WorkspaceEdit.
function toWorkspaceEdit(edit: WorkspaceEdit): vscode.WorkspaceEdit {
  const out = new vscode.WorkspaceEdit();
  for (const change of edit.documentChanges ?? []) {
    if ("kind" in change && change.kind === "create") out.createFile(vscode.Uri.parse(change.uri), change.options ?? {});
    else if ("kind" in change) out.deleteFile(vscode.Uri.parse(change.uri), {});
    else {
      const uri = vscode.Uri.parse(change.textDocument.uri);
      for (const e of change.edits) {
        const range = new vscode.Range(e.range.start.line, e.range.start.character, e.range.end.line, e.range.end.character);
        out.replace(uri, range, e.newText);
      }
    }
  }
  return out;
}

export const vscodeFiles: FsHost = {
  document(path: string) {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    return doc ? { content: doc.getText(), version: doc.version } : undefined;
  },
  async applyEdit(_label: string, edit: WorkspaceEdit) {
    const applied = await vscode.workspace.applyEdit(toWorkspaceEdit(edit));
    return applied ? { applied } : { applied, failureReason: "VS Code did not apply the edit" };
  },
  dirty() {
    return vscode.workspace.textDocuments.filter((d) => d.uri.scheme === "file" && d.isDirty).map((d) => d.uri.fsPath);
  },
};

export function reportDirty(client: PiClient): vscode.Disposable {
  const reporter = new DirtyReporter((paths) => client.notify("fs/didChangeDirty", { paths }));
  const update = () => reporter.update(vscodeFiles.dirty());
  return vscode.Disposable.from(
    vscode.workspace.onDidChangeTextDocument(update),
    vscode.workspace.onDidSaveTextDocument(update),
    vscode.workspace.onDidCloseTextDocument(update),
  );
}

type Item = { kind: "file"; path: string; status: string; reason?: string } | { kind: "hunk"; path: string; hunk: Hunk };

class ChangesTree implements vscode.TreeDataProvider<Item> {
  private changed = new vscode.EventEmitter<Item | undefined>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly review: Review) {
    review.onChange(() => this.changed.fire(undefined));
  }

  getChildren(item?: Item): Item[] {
    const files = toReview(this.review.current);
    if (!item) return files.map((f) => ({ kind: "file", path: f.path, status: f.status, reason: f.reason ?? undefined }));
    if (item.kind === "hunk") return [];
    return (files.find((f) => f.path === item.path)?.hunks ?? []).map((hunk) => ({ kind: "hunk", path: item.path, hunk }));
  }

  getTreeItem(item: Item): vscode.TreeItem {
    if (item.kind === "file") {
      const tree = new vscode.TreeItem(item.path, vscode.TreeItemCollapsibleState.Expanded);
      // A file the daemon could not read (too large, a hard link out of the workspace…): listed, not restorable.
      tree.description = item.reason ? `${item.status} · not restorable` : item.status;
      tree.tooltip = item.reason ? `${item.path}: ${item.reason}` : undefined;
      tree.contextValue = "piFile";
      tree.command = { command: "pi.changes.openDiff", title: "Show diff", arguments: [item] };
      return tree;
    }
    const tree = new vscode.TreeItem(item.hunk.header, vscode.TreeItemCollapsibleState.None);
    tree.contextValue = "piHunk";
    tree.command = { command: "pi.changes.openDiff", title: "Show diff", arguments: [item] };
    return tree;
  }
}

// The active editor's selection (the whole document when nothing is selected) as a ContextItem.
export function selectionContext(editor: vscode.TextEditor): ContextItem {
  const s = editor.selection;
  const range = s.isEmpty ? undefined : { start: { line: s.start.line, character: s.start.character },
                                           end: { line: s.end.line, character: s.end.character } };
  const path = editor.document.uri.scheme === "file" ? editor.document.uri.fsPath : uriPath(editor.document.uri.toString());
  return { path, range, text: range ? editor.document.getText(s) : undefined };
}

export function registerReview(context: vscode.ExtensionContext, client: PiClient): Review {
  const review = new Review(client);
  const before = new Map<string, string>();
  // The view shows one run at a time (the latest, or one picked): its id is the view's description.
  const changesView = vscode.window.createTreeView("pi.changes", { treeDataProvider: new ChangesTree(review) });
  review.onChange((changes) => { changesView.description = changes ? `run ${changes.runId}` : undefined; });
  // what accept (a count) or revert (a RevertResult) answered: the hunks revert left alone are said
  const shown = async (result: number | RevertResult | undefined) => {
    const conflicts = typeof result === "object" ? result.conflicts : [];
    for (const c of conflicts) vscode.window.showWarningMessage(`pi: not reverted, ${c.path}: ${c.reason}`);
  };
  const act = (run: (path?: string, hunkIds?: string[]) => Promise<number | RevertResult>) => async (item?: Item) => {
    if (!item) return shown(await run());
    return shown(await run(item.path, item.kind === "hunk" ? [item.hunk.id] : undefined));
  };
  // From the editor (the diff editor's file side, or the file itself): the hunk at the cursor.
  const actHere = (run: (path?: string, hunkIds?: string[]) => Promise<number | RevertResult>) => async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) return;
    const line = editor.selection.active.line + 1;
    const found = review.at(editor.document.uri.fsPath, line);
    if (!found) return vscode.window.showWarningMessage(`pi: run ${review.current?.runId ?? "?"} did not change this file`);
    if (!found.hunk) return vscode.window.showWarningMessage(`pi: line ${line} is in no hunk of run ${review.current?.runId}`);
    return shown(await run(found.path, [found.hunk.id]));
  };
  // Editor title actions show on a file the shown run changed.
  const markEditor = () => {
    const editor = vscode.window.activeTextEditor;
    const changed = !!editor && editor.document.uri.scheme === "file" && !!review.at(editor.document.uri.fsPath, 0);
    vscode.commands.executeCommand("setContext", "pi.changedFile", changed);
  };
  review.onChange(markEditor);
  context.subscriptions.push(
    changesView,
    vscode.workspace.registerTextDocumentContentProvider(BEFORE, {
      provideTextDocumentContent: (uri) => before.get(uri.toString()) ?? "",
    }),
    vscode.commands.registerCommand("pi.changes.refresh", () => review.load()),
    vscode.commands.registerCommand("pi.changes.pickRun", async () => {
      const runs = await review.runs();
      const pick = await vscode.window.showQuickPick(
        runs.map((run, n) => ({ label: `run ${run.runId}`, description: `${run.files} file${run.files === 1 ? "" : "s"}${n === 0 ? " · latest" : ""}`, runId: run.runId })),
        { placeHolder: "Whose changes should the Changes view show?" });
      if (pick) await review.load(pick.runId);
    }),
    vscode.commands.registerCommand("pi.changes.openDiff", async (item: Item) => {
      const runId = review.current?.runId ?? "";
      const { before: text } = await review.contents(item.path, runId);
      // an absolute path (a file outside the workspace) must not become "//…": that would be an authority
      const left = vscode.Uri.from({ scheme: BEFORE, path: item.path.startsWith("/") ? item.path : "/" + item.path,
                                     query: `run=${runId}` });
      before.set(left.toString(), text);
      const right = vscode.Uri.file(review.absolutePath(item.path));
      await vscode.commands.executeCommand("vscode.diff", left, right, `${item.path} (before pi run ${runId})`);
      const editor = vscode.window.activeTextEditor;
      if (item.kind === "hunk" && editor) {
        // the cursor at the hunk: the title bar's Accept / Revert act on the hunk at the cursor
        const line = Math.max(item.hunk.newStart - 1, 0);
        editor.selection = new vscode.Selection(line, 0, line, 0);
        editor.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenter);
      }
    }),
    vscode.commands.registerCommand("pi.changes.accept", act((path, ids) => review.accept(path, ids))),
    vscode.commands.registerCommand("pi.changes.revert", async (item?: Item) => {
      if (item) return act((path, ids) => review.revert(choose(path, ids)))(item);
      // the whole run: asked first, then told what went back and what was left alone
      const changes = review.current ?? await review.load();
      if (!toReview(changes).length) return vscode.window.showInformationMessage(`pi: run ${changes.runId} has nothing left to revert`);
      const { message, detail } = revertQuestion(changes);
      if (await vscode.window.showWarningMessage(message, { modal: true, detail }, "Revert") !== "Revert") return;
      const result = await review.revert(pending(review.current));
      const report = revertReport(result);
      if (result.conflicts.length) vscode.window.showWarningMessage(report);
      else vscode.window.showInformationMessage(report);
    }),
    vscode.commands.registerCommand("pi.changes.acceptHere", actHere((path, ids) => review.accept(path, ids))),
    vscode.commands.registerCommand("pi.changes.revertHere", actHere((path, ids) => review.revert(choose(path, ids)))),
    vscode.window.onDidChangeActiveTextEditor(markEditor),
  );
  return review;
}
