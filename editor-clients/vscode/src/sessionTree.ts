// The Session Tree view: the current session's conversation (what the user said and the answers;
// rpcClient.ts's outline leaves the file's bookkeeping out), linear runs flat, one collapsible
// item per branch. A click asks before going back to a message; cancelled, nothing moves.

import * as vscode from "vscode";
import type { PiClient, TreeItem } from "./rpcClient";
import { ChatHost, moveTarget } from "./sessionActions";
import { goBackPrompt } from "./rewind";

export class SessionTree implements vscode.TreeDataProvider<TreeItem> {
  private changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;

  constructor(private readonly client: () => PiClient | undefined) {}

  refresh(): void {
    this.changed.fire();
  }

  async getChildren(item?: TreeItem): Promise<TreeItem[]> {
    if (item) return item.children;
    try {
      return (await this.client()?.tree()) ?? [];
    } catch {
      return []; // no session yet
    }
  }

  getTreeItem(item: TreeItem): vscode.TreeItem {
    const collapse = item.kind === "branch"
      ? (item.current ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed)
      : vscode.TreeItemCollapsibleState.None;
    const node = new vscode.TreeItem(item.title, collapse);
    node.description = [item.label && `🏷 ${item.label}`, item.current && (item.kind === "entry" ? "● current" : "current branch")]
      .filter(Boolean).join(" ");
    if (item.kind === "entry") {
      node.iconPath = new vscode.ThemeIcon(item.role === "user" ? "account" : item.role === "summary" ? "note" : "comment");
      node.contextValue = "entry";
      node.tooltip = item.text || item.title;
      node.command = { command: "pi.navigate", title: "Go back to this message", arguments: [item] };
    }
    return node;
  }
}

// Go back to a message of the tree, once the user says so (a user message: to just before it, its
// text back into the input); the files stay as they are.
export async function goBack(host: ChatHost, item: TreeItem | undefined, summarize: boolean): Promise<void> {
  if (!item || item.kind !== "entry") return;
  const found = await moveTarget(host, item.id, "go back in the conversation");
  if (!found) return;
  const { client, state, target } = found;
  if (target.entryId === null) {
    vscode.window.showWarningMessage("pi: nothing comes before the first message; use Rewind to Here or start a new session");
    return;
  }
  const { message, detail, choice } = goBackPrompt(target, item.role, item.text ?? item.title);
  if ((await vscode.window.showWarningMessage(message, { modal: true, detail }, choice)) !== choice) return;
  await client.navigate(target.entryId, summarize);
  await host.redraw(state.sessionId);
  if (target.text !== undefined) host.post({ type: "input", text: target.text });
}
