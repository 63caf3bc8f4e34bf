// A file name in an answer, clicked: the workspace file opened in the editor (at its line when the
// name had one). The name comes from the model's text, so only a file inside the folder pi works in
// is opened; anything else (an absolute path, "..", a missing file) is refused with a message.

import * as vscode from "vscode";
import { insideFolder } from "./folderPath";

export async function openWorkspaceFile(folder: string, name: string, line?: number): Promise<void> {
  const file = insideFolder(folder, name);
  const uri = file && vscode.Uri.file(file);
  const found = uri && await vscode.workspace.fs.stat(uri).then(() => true, () => false);
  if (!uri || !found) {
    vscode.window.showWarningMessage(`pi: ${name} is not a file of this workspace`);
    return;
  }
  const at = line && line > 0 ? new vscode.Position(line - 1, 0) : undefined;
  await vscode.window.showTextDocument(uri, { preview: true, ...(at ? { selection: new vscode.Range(at, at) } : {}) });
}
