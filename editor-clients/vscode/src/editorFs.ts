// The editor as the agent's file system, and the review of a run's changes: the protocol
// side, with no `vscode` import (node --test drives it against the real daemon).
//   * fs/readTextFile answers from open documents (dirty or not), with their version;
//   * workspace/applyEdit refuses edits made from an older document version, then lets the
//     host apply the LSP WorkspaceEdit (extension.ts: vscode.workspace.applyEdit);
//   * fs/didChangeDirty reports the documents with unsaved changes when that set changes, and
//     the whole set each time a daemon starts (rpcClient.ts), so a buffer left unsaved earlier counts;
//   * Review keeps a run's files and hunks and accepts / reverts files or single hunks; a
//     changed file's path is relative to the daemon's workspace, not to the first VS Code
//     workspace folder (in a multi-root window the daemon works in the one picked).

import * as nodePath from "path";
import type {
  ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, ChangedFile, ChangedHunk, ChangesRevertResult, Position,
  ReadTextFileParams, ReadTextFileResult, TextEdit, WorkspaceEdit,
} from "./protocol";
import type { PiClient } from "./rpcClient";

export interface OpenDocument {
  content: string;
  version: number;
}

export interface FsHost {
  document(path: string): OpenDocument | undefined; // an open document, by absolute path
  applyEdit(label: string, edit: WorkspaceEdit): Promise<ApplyWorkspaceEditResult>;
  dirty(): string[]; // the absolute paths of the documents with unsaved changes
}

export interface FsHandlers {
  readTextFile(params: ReadTextFileParams): ReadTextFileResult;
  applyEdit(params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult>;
  dirtyPaths(): string[]; // sent as fs/didChangeDirty whenever a daemon starts
}

export function uriPath(uri: string): string {
  return decodeURIComponent(new URL(uri).pathname);
}

// Lines `line` (1-based; default 1) to `line + limit - 1` (default: to the end) of a text, each
// with its line end, as fs/readTextFile asks for a window.
export function lineWindow(text: string, line?: number, limit?: number): string {
  if (line === undefined && limit === undefined) return text;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const start = Math.max((line ?? 1) - 1, 0);
  return lines.slice(start, limit === undefined ? undefined : start + limit).join("");
}

export function fsHandlers(host: FsHost): FsHandlers {
  return {
    dirtyPaths: () => host.dirty(),
    readTextFile(params) {
      const document = host.document(params.path);
      if (!document) return { content: null };
      return { content: lineWindow(document.content, params.line, params.limit), version: document.version };
    },
    async applyEdit(params) {
      const changes = params.edit?.documentChanges ?? [];
      for (const [index, change] of changes.entries()) {
        if (!("textDocument" in change)) continue; // a file created or deleted: no version to check
        const version = change.textDocument.version;
        if (typeof version !== "number") continue;
        const now = host.document(uriPath(change.textDocument.uri))?.version;
        if (now !== undefined && now !== version)
          return { applied: false, failedChange: index, failureReason: `the document changed since it was read (version ${version}, now ${now})` };
      }
      try {
        return await host.applyEdit(params.label, params.edit);
      } catch (error: any) {
        return { applied: false, failureReason: String(error?.message ?? error) };
      }
    },
  };
}

// Sends fs/didChangeDirty with the whole set, only when it changed.
export class DirtyReporter {
  private last = "";
  constructor(private readonly notify: (paths: string[]) => void) {}

  update(paths: string[]): void {
    const sorted = [...paths].sort();
    const key = sorted.join("\n");
    if (key === this.last) return;
    this.last = key;
    this.notify(sorted);
  }
}

// Apply LSP TextEdits (whole-document offsets; UTF-16 code units, as JS strings count) to a text.
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === "\n") starts.push(i + 1);
  const offset = (p: Position) => (p.line >= starts.length ? text.length : Math.min(starts[p.line] + p.character, text.length));
  const spans = edits.map((e) => [offset(e.range.start), offset(e.range.end), e.newText] as [number, number, string]);
  spans.sort((a, b) => b[0] - a[0]);
  for (const [start, end, newText] of spans) text = text.slice(0, start) + newText + text.slice(end);
  return text;
}

// --- review ------------------------------------------------------------------------------

export type Hunk = ChangedHunk;
export type { ChangedFile };

// A run's changes as the Changes view shows them: from changes/get, or a turn_diff event (no runs list).
export interface Changes {
  runId: string;
  files: ChangedFile[];
  runs?: string[];
}

export type RevertResult = ChangesRevertResult;

const MAX_RUNS_LISTED = 30; // a changes/get each

export class Review {
  current?: Changes;
  private listeners: ((changes: Changes | undefined) => void)[] = [];

  constructor(private readonly client: PiClient) {
    client.onEvent((_sessionId, event) => {
      if (event.type === "turn_diff") this.set({ runId: event.runId, files: event.files });
    });
  }

  onChange(listener: (changes: Changes | undefined) => void): void {
    this.listeners.push(listener);
  }

  private set(changes: Changes | undefined): void {
    this.current = changes;
    for (const listener of this.listeners) listener(changes);
  }

  async load(runId?: string): Promise<Changes> {
    const changes = await this.client.request("changes/get", { runId });
    this.set(changes);
    return changes;
  }

  // The session's latest runs that changed files, newest first, with how many files each changed.
  async runs(): Promise<{ runId: string; files: number }[]> {
    const { runs } = await this.client.request("changes/get", {});
    const out = [];
    for (const runId of [...(runs ?? [])].reverse().slice(0, MAX_RUNS_LISTED))
      out.push({ runId, files: (await this.client.request("changes/get", { runId })).files.length });
    return out;
  }

  // The whole texts before and after the run, for a side-by-side diff.
  async contents(path: string, runId = this.current?.runId): Promise<{ before: string; after: string }> {
    const { files } = await this.client.request("changes/get", { runId, path, withContent: true });
    return { before: files[0]?.before ?? "", after: files[0]?.after ?? "" };
  }

  // The file a changed path names: the daemon's paths are relative to its workspace (absolute
  // outside it), whichever VS Code workspace folder comes first.
  absolutePath(path: string): string {
    return nodePath.resolve(this.client.workspace, path);
  }

  // The hunk of `path` whose lines (after the run) include `line` (1-based).
  hunkAt(path: string, line: number): Hunk | undefined {
    const file = this.current?.files.find((f) => f.path === path);
    return file?.hunks.find((h) => line >= h.newStart && line < h.newStart + Math.max(h.newLines, 1));
  }

  // What an editor showing the file at `absolute` (a changed file, or its side of the diff)
  // has at `line` (1-based): the run's path for it and the hunk there, if any.
  at(absolute: string, line: number): { path: string; hunk?: Hunk } | undefined {
    const file = this.current?.files.find((f) => this.absolutePath(f.path) === absolute);
    return file && { path: file.path, hunk: this.hunkAt(file.path, line) };
  }

  async accept(path?: string, hunkIds?: string[]): Promise<number> {
    const runId = this.current?.runId;
    const result = await this.client.request("changes/accept", { runId, files: choose(path, hunkIds) });
    await this.load(runId);
    return result.accepted;
  }

  // The files (or hunks) the caller chose: choose(...) for one, pending(...) for "revert run".
  // The shown run's, or (none shown yet) the latest run's: changes/revert names its run.
  async revert(files: FileChoice[] | undefined): Promise<RevertResult> {
    const runId = (this.current ?? await this.load()).runId;
    const result = await this.client.request("changes/revert", { runId, files });
    await this.load(runId);
    return result;
  }
}

export interface FileChoice { path: string; hunkIds?: string[] }

// A file (all its hunks, or those named); no path: the whole run.
export function choose(path?: string, hunkIds?: string[]): FileChoice[] | undefined {
  return path === undefined ? undefined : [{ path, hunkIds }];
}

// What "revert run" reverts: what is still to review (an accepted hunk stays as the user said).
export function pending(changes: Changes | undefined): FileChoice[] {
  return toReview(changes).map((f) => ({ path: f.path, hunkIds: f.hunks.length ? f.hunks.map((h) => h.id) : undefined }));
}

// What the Changes view lists of a run: the hunks still to review (an accepted hunk is done, a
// reverted one is gone from the run's diff) and the files that still have some (a file with no
// hunks at all, an empty one created, stays).
export function toReview(changes: Changes | undefined): ChangedFile[] {
  return (changes?.files ?? []).filter((f) => !f.hunks.length || f.hunks.some((h) => !h.accepted))
    .map((f) => ({ ...f, hunks: f.hunks.filter((h) => !h.accepted) }));
}

const count = (n: number, one: string) => `${n} ${one}${n === 1 ? "" : "s"}`;

// What "revert run" asks first, and what it says after.
export function revertQuestion(changes: Changes): { message: string; detail: string } {
  const files = toReview(changes);
  const hunks = files.reduce((n, f) => n + f.hunks.length, 0);
  return { message: `Revert run ${changes.runId}?`,
           detail: `${count(hunks, "hunk")} in ${count(files.length, "file")} go back to how they were before the run:\n`
             + files.map((f) => `• ${f.path} (${f.reason ? `not restorable: ${f.reason}` : count(f.hunks.length, "hunk")})`).join("\n")
             + "\n\nA hunk changed since by someone else is left alone and listed." };
}

export function revertReport(result: RevertResult): string {
  const hunks = result.reverted.reduce((n, f) => n + f.hunkIds.length, 0);
  const said = `pi: reverted ${count(hunks, "hunk")} in ${count(result.reverted.length, "file")}`;
  if (!result.conflicts.length) return said;
  return `${said}; left alone (changed since): ${result.conflicts.map((c) => `${c.path}: ${c.reason}`).join("; ")}`;
}
