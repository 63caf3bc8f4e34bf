// "Open diff" on an edit's card: the editor's side-by-side diff, the file before the edit (pi-edit-before:,
// taken back from the file now, editDiff.ts) against the file as it is. When the file changed since,
// the edit's unified diff is shown as a document instead.

import * as vscode from "vscode";
import * as path from "path";
import { diffPath, textBefore } from "./editDiff";

const SCHEME = "pi-edit-before"; // not the Changes view's pi-before: (a run's start)
const befores = new Map<string, string>(); // pi-edit-before: path → the text before the edit

export function registerEditDiffs(): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(SCHEME, {
    provideTextDocumentContent: (uri) => befores.get(uri.path) ?? "",
  });
}

export async function showEdit(folder: string, diff: string): Promise<void> {
  const shown = diffPath(diff);
  const file = shown && vscode.Uri.file(path.isAbsolute(shown) ? shown : path.join(folder, shown));
  const now = file && await vscode.workspace.openTextDocument(file).then((d) => d.getText(), () => undefined);
  const before = now === undefined ? undefined : textBefore(now, diff);
  if (!file || before === undefined) {
    const document = await vscode.workspace.openTextDocument({ content: diff, language: "diff" });
    await vscode.window.showTextDocument(document, { preview: true });
    return;
  }
  const key = `/${befores.size}/${path.basename(file.fsPath)}`;
  befores.set(key, before);
  await vscode.commands.executeCommand("vscode.diff", vscode.Uri.from({ scheme: SCHEME, path: key }), file,
                                       `${shown}: pi's edit`, { preview: true });
}
