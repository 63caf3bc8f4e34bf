// The workspace's files for "@" completion in the chat input: vscode.workspace.findFiles under
// pi's folder, leaving out what files.exclude hides, node_modules, .pi/ and what .gitignore
// ignores (one `git check-ignore` for all of them), at most MAX_FILES, relative to the folder.

import * as vscode from "vscode";
import * as path from "path";
import { execFile } from "child_process";

export const MAX_FILES = 5000;

export async function workspaceFiles(folder: string): Promise<string[]> {
  const base = vscode.Uri.file(folder);
  // An exclude given to findFiles replaces files.exclude: so it is part of the one given.
  const hidden = vscode.workspace.getConfiguration("files", base).get<Record<string, unknown>>("exclude") ?? {};
  const globs = [...Object.keys(hidden).filter((glob) => hidden[glob] === true), "**/node_modules/**", "**/.pi/**"];
  const found = await vscode.workspace.findFiles(new vscode.RelativePattern(base, "**/*"), `{${globs.join(",")}}`, MAX_FILES);
  const paths = found.map((uri) => path.relative(folder, uri.fsPath).split(path.sep).join("/"));
  const ignored = await gitIgnored(folder, paths);
  return paths.filter((p) => !ignored.has(p)).sort();
}

// The paths .gitignore ignores; none outside a git work tree (or without git).
function gitIgnored(folder: string, paths: string[]): Promise<Set<string>> {
  if (paths.length === 0) return Promise.resolve(new Set());
  return new Promise((resolve) => {
    const child = execFile("git", ["check-ignore", "-z", "--stdin"], { cwd: folder, maxBuffer: 64 << 20 },
      (_error, stdout) => resolve(new Set(String(stdout ?? "").split("\0").filter(Boolean)))); // exit 1: none ignored
    child.stdin?.on("error", () => undefined);
    child.stdin?.end(paths.join("\0") + "\0");
  });
}
