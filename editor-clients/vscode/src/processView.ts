// The Background Processes view, under the chat in pi's side bar: the background processes the agent started
// (command, how long it has run, running or how it ended), a Stop button on each running one, a
// click opening its output as a read-only document that follows it while it runs. The count of
// running ones is the view's badge (on the π icon while the side bar shows something else).
// The list itself is processes.ts's.

import * as vscode from "vscode";
import { FollowedOutput, ProcessInfo, ProcessList, shortCommand, shortStatus, statusLine } from "./processes";
import type { PiClient } from "./rpcClient";

const SCHEME = "pi-process";
const FOLLOW_MS = 500;

class ProcessTree implements vscode.TreeDataProvider<ProcessInfo> {
  private changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly list: ProcessList) {}

  refresh(): void {
    this.changed.fire();
  }

  getChildren(item?: ProcessInfo): ProcessInfo[] {
    return item ? [] : this.list.all;
  }

  getParent(): undefined {
    return undefined; // a flat list (reveal asks)
  }

  getTreeItem(p: ProcessInfo): vscode.TreeItem {
    const fresh = this.list.get(p.id) ?? p;
    // how long and how it ended first, the command after it: at the side bar's usual width a long
    // command is cut, not the state (the tooltip has it all)
    const item = new vscode.TreeItem(shortStatus(fresh), vscode.TreeItemCollapsibleState.None);
    item.id = fresh.id;
    item.description = shortCommand(fresh.command);
    const running = fresh.status === "running";
    item.iconPath = new vscode.ThemeIcon(running ? "sync~spin" : fresh.status === "killed" ? "circle-slash"
      : fresh.exitCode === 0 ? "pass" : "error");
    item.contextValue = running ? "piProcessRunning" : "piProcessEnded";
    // plain text: the command is the agent's, not Markdown to render
    item.tooltip = `${fresh.command}\n\nprocess ${fresh.id} · pid ${fresh.pid} · ${statusLine(fresh)}\n` +
      `started ${new Date(fresh.startedAt).toLocaleTimeString()}\noutput: ${fresh.outputPath}`;
    item.command = { command: "pi.process.output", title: "Show Output", arguments: [fresh] };
    return item;
  }
}

// The output documents: pi-process:/<command> (<id>)?<id>@<startedAt>, each following its process while it
// runs and is open (the start time tells a daemon's p1 from the p1 of the daemon started after it).
class OutputDocuments implements vscode.TextDocumentContentProvider {
  private changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly outputs = new Map<string, FollowedOutput>(); // by the uri's query
  private timer?: ReturnType<typeof setInterval>;
  private reading = false; // a round of reads still going: the next tick waits for it

  constructor(private readonly list: ProcessList, private readonly client: () => Promise<PiClient>) {}

  uri(p: ProcessInfo): vscode.Uri {
    const name = shortCommand(p.command, 40).replace(/[\\/:*?"<>|#%]/g, "_");
    return vscode.Uri.from({ scheme: SCHEME, path: `/${name} (${p.id})`, query: `${p.id}@${p.startedAt}` });
  }

  // The process a document follows, while the daemon that started it runs.
  private process(query: string): ProcessInfo | undefined {
    const [id, startedAt] = query.split("@");
    const p = this.list.get(id);
    return p && String(p.startedAt) === startedAt ? p : undefined;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const id = uri.query.split("@")[0];
    let output = this.outputs.get(uri.query);
    if (!output) {
      output = new FollowedOutput(id);
      this.outputs.set(uri.query, output);
      await output.read(await this.client()).catch((error: any) => {
        output!.text = `[the output of process ${id} could not be read: ${error.message ?? error}]`;
        output!.status = "gone";
      });
      this.follow();
    }
    return output.shown(this.process(uri.query)?.outputPath);
  }

  // Every FOLLOW_MS, the open documents of running processes read on; the editors at their end stay there.
  private follow(): void {
    this.timer ??= setInterval(async () => {
      if (this.reading) return;
      const open = new Set(vscode.workspace.textDocuments.filter((d) => d.uri.scheme === SCHEME).map((d) => d.uri.query));
      for (const [query] of this.outputs) if (!open.has(query)) this.outputs.delete(query); // read afresh when opened again
      const following = [...this.outputs].filter(([, o]) => !o.done);
      if (!following.length) {
        clearInterval(this.timer);
        this.timer = undefined;
        return;
      }
      this.reading = true;
      try {
        const client = await this.client();
        for (const [query, output] of following) await this.readOn(client, query, output);
      } finally {
        this.reading = false;
      }
    }, FOLLOW_MS);
  }

  // One document's process read on (when its daemon still runs it), its editors kept at the end.
  private async readOn(client: PiClient, query: string, output: FollowedOutput): Promise<void> {
    let changed = true;
    if (this.process(query)) changed = await output.read(client).catch(() => false);
    else output.status = "gone"; // its daemon ended: the p1 asked now would be another process
    if (!changed) return;
    const docs = vscode.workspace.textDocuments.filter((d) => d.uri.scheme === SCHEME && d.uri.query === query);
    const atEnd = vscode.window.visibleTextEditors.filter((e) => docs.includes(e.document) &&
      e.visibleRanges.some((r) => r.end.line >= e.document.lineCount - 2));
    for (const doc of docs) this.changed.fire(doc.uri);
    // after the document took the new text: the editors that showed its end show the new end
    setTimeout(() => atEnd.forEach((e) => e.revealRange(new vscode.Range(e.document.lineCount, 0, e.document.lineCount, 0))), 50);
  }

  dispose(): void {
    clearInterval(this.timer);
  }
}

export class ProcessView implements vscode.Disposable {
  readonly list = new ProcessList();
  private readonly tree = new ProcessTree(this.list);
  private readonly view = vscode.window.createTreeView("pi.processes", { treeDataProvider: this.tree });
  private readonly documents: OutputDocuments;
  private ticking?: ReturnType<typeof setInterval>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly client: () => Promise<PiClient>, private readonly chatVisible: () => boolean) {
    this.documents = new OutputDocuments(this.list, client);
    this.list.onChange(() => this.show());
    this.disposables.push(
      this.view, this.documents,
      this.view.onDidChangeVisibility(() => this.tick()),
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this.documents),
      vscode.commands.registerCommand("pi.process.kill", (p?: ProcessInfo) => this.kill(p)),
      vscode.commands.registerCommand("pi.process.output", (p?: ProcessInfo) => this.output(p)),
    );
  }

  private show(): void {
    const running = this.list.running.length;
    this.view.badge = running ? { value: running, tooltip: `${running} background process${running === 1 ? "" : "es"} running` } : undefined;
    this.view.description = running ? `${running} running` : undefined;
    this.tree.refresh();
    this.tick();
  }

  // The durations move on each second while the view shows a running process.
  private tick(): void {
    const needed = this.view.visible && this.list.running.length > 0;
    if (needed && !this.ticking) this.ticking = setInterval(() => this.tree.refresh(), 1000);
    if (!needed && this.ticking) {
      clearInterval(this.ticking);
      this.ticking = undefined;
    }
  }

  // A process the agent just started is shown where the user chats (the side bar is not switched to it).
  started(p: ProcessInfo): void {
    if (this.chatVisible()) this.view.reveal(p, { select: false, focus: false }).then(undefined, () => undefined);
  }

  // Brings the process into view, selected (from the chat's card).
  async reveal(id: string): Promise<void> {
    const p = this.list.get(id);
    if (p) await this.view.reveal(p, { select: true, focus: false });
  }

  async kill(p?: ProcessInfo | string): Promise<void> {
    const chosen = typeof p === "string" ? this.list.get(p) : p ?? await this.pick("Stop which background process?", true);
    if (!chosen) return;
    const ended = await this.list.kill(await this.client(), chosen.id);
    vscode.window.setStatusBarMessage(`pi: ${shortCommand(ended.command, 40)} ${statusLine(ended)}`, 4000);
  }

  async output(p?: ProcessInfo | string): Promise<void> {
    const chosen = typeof p === "string" ? this.list.get(p) : p ?? await this.pick("Show the output of which process?", false);
    if (!chosen) return;
    const doc = await vscode.workspace.openTextDocument(this.documents.uri(chosen));
    const editor = await vscode.window.showTextDocument(doc, { preview: true });
    editor.revealRange(new vscode.Range(doc.lineCount, 0, doc.lineCount, 0));
  }

  private async pick(placeHolder: string, runningOnly: boolean): Promise<ProcessInfo | undefined> {
    const shown = runningOnly ? this.list.running : this.list.all;
    if (!shown.length) {
      vscode.window.showInformationMessage(`pi: no background process${runningOnly ? " is running" : " yet"}`);
      return undefined;
    }
    return (await vscode.window.showQuickPick(shown.map((p) => ({ label: shortCommand(p.command), description: statusLine(p), p })),
                                              { placeHolder }))?.p;
  }

  dispose(): void {
    clearInterval(this.ticking);
    this.disposables.forEach((d) => d.dispose());
  }
}
