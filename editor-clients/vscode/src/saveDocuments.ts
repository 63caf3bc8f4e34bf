// The daemon's fs/save: before the agent's command runs, the documents it edited are saved, so the
// command sees the edits. Only those the daemon names, and only when open and unsaved; saving is not an
// edit, so their undo history stays. Off when the user turns pi.saveBeforeCommands off.

import * as vscode from "vscode";
import type { SaveFailure, SaveFilesParams } from "./protocol";

export function saveBeforeCommands(): boolean {
  return vscode.workspace.getConfiguration("pi").get<boolean>("saveBeforeCommands", true);
}

export async function saveDocuments({ paths }: SaveFilesParams): Promise<{ saved: string[]; failed: SaveFailure[] }> {
  const result = { saved: [] as string[], failed: [] as SaveFailure[] };
  for (const path of paths) {
    const document = vscode.workspace.textDocuments.find((d) => d.uri.scheme === "file" && d.uri.fsPath === path);
    if (!document?.isDirty) continue;
    try {
      if (await document.save()) result.saved.push(path);
      else result.failed.push({ path, reason: "VS Code did not save it" });
    } catch (error: any) {
      result.failed.push({ path, reason: String(error.message ?? error) });
    }
  }
  return result;
}
