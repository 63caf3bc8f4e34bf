// Issue #28 in VS Code: "Rewind to here" (the chat's user messages, the Session Tree's entries) and
// the session's mode (the chat's selector, a status bar item, "Execute the plan"). The decisions are
// in rewind.ts and modes.ts (no `vscode` there); this file is the VS Code surface.

import * as vscode from "vscode";
import type { PiClient } from "./rpcClient";
import type { SessionState } from "./protocol";
import type { ToPage } from "./chatPage";
import { RewindTarget, rewindPrompt, rewindReport, rewindTarget } from "./rewind";
import { MODES, PLAN_FOLLOW_UP, modeStatus } from "./modes";

// What these actions need of the extension.
export interface ChatHost {
  client(): Promise<PiClient>;
  post(message: ToPage): void;
  redraw(sessionId: string): Promise<unknown>; // the chat drawn again from the session (after a move)
  send(text: string): Promise<void>; // as if typed in the chat
  sessionId?: string; // the chat's session (an editor tab's); none: the current session (the side bar's)
}

// Where going back to an entry of the chat's session lands (rewindTarget), with the session's
// state; none while the agent is running (the user is told to wait before they can `doing`).
export async function moveTarget(host: ChatHost, entryId: string, doing: string):
    Promise<{ client: PiClient; state: SessionState; target: RewindTarget } | undefined> {
  const client = await host.client();
  const sessionId = host.sessionId;
  const state = await client.request("getState", { sessionId });
  if (state.isStreaming) {
    vscode.window.showWarningMessage(`pi: wait until the agent is done (or stop it) to ${doing}`);
    return undefined;
  }
  const { entries } = await client.request("session/entries", { scope: "file", sessionId });
  return { client, state, target: rewindTarget(entries, entryId) };
}

// Rewind to an entry (a user message: to before it, its text back into the input). A dry run
// first: the modal lists the files that would go back and those changed by someone else since.
export async function rewindTo(host: ChatHost, entryId: string): Promise<void> {
  const found = await moveTarget(host, entryId, "rewind");
  if (!found) return;
  const { client, state, target } = found;
  const sessionId = host.sessionId;
  const plan = await client.request("session/rewind", { entryId: target.entryId, dryRun: true, sessionId });
  const { message, detail, choices } = rewindPrompt(plan, target.text);
  const choice = await vscode.window.showWarningMessage(message, { modal: true, detail }, ...choices.map((c) => c.label));
  const files = choices.find((c) => c.label === choice)?.files;
  if (!files) return;
  const result = await client.request("session/rewind", { entryId: target.entryId, files, sessionId });
  await host.redraw(state.sessionId);
  if (target.text !== undefined) host.post({ type: "input", text: target.text });
  const report = rewindReport(result);
  if (report) vscode.window.showWarningMessage(report);
  else vscode.window.setStatusBarMessage(
    `pi: rewound${files === "revert" && result.files.length ? `, ${result.files.length} file(s) taken back` : ""}`, 5000);
}

// The mode in the status bar (and the chat's selector), kept from getState and mode_changed.
export class ModeIndicator implements vscode.Disposable {
  readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 99);
  mode = "ask";
  private offeredRewind?: string | null;

  constructor(private readonly host: ChatHost) {
    this.item.command = "pi.selectMode";
    this.show("ask");
    this.item.show();
  }

  show(mode: string): void {
    this.mode = mode;
    Object.assign(this.item, modeStatus(mode));
    this.host.post({ type: "mode", mode });
  }

  // From the daemon's state: its mode, and a rewind cut short (offered once to finish).
  async refresh(client: PiClient): Promise<void> {
    const state = await client.request("getState");
    this.show(state.mode ?? "ask");
    const pending = state.pendingRewind;
    if (pending && this.offeredRewind !== pending.entryId) {
      this.offeredRewind = pending.entryId;
      const finish = await vscode.window.showWarningMessage(
        `pi: a rewind was cut short; ${pending.files.length} file(s) may still be as before it: ${pending.files.join(", ")}`,
        "Finish the rewind");
      if (finish) {
        const result = await client.request("session/rewind", { entryId: pending.entryId });
        await this.host.redraw(state.sessionId);
        const report = rewindReport(result);
        if (report) vscode.window.showWarningMessage(report);
      }
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}

export async function setMode(host: ChatHost, mode: string): Promise<void> {
  await (await host.client()).request("setMode", { mode: mode as "plan" | "ask" | "auto-edit", sessionId: host.sessionId });
}

export async function pickMode(host: ChatHost, current: string): Promise<void> {
  const pick = await vscode.window.showQuickPick(
    MODES.map((m) => ({ label: m.label, description: m.id === current ? "current" : "", detail: m.description, id: m.id })),
    { placeHolder: `Mode (now ${current})` });
  if (pick) await setMode(host, pick.id);
}

// "Execute the plan": leave plan mode (for ask, or auto-edit) and tell the agent to go ahead.
export async function executePlan(host: ChatHost, mode: string): Promise<void> {
  await setMode(host, mode === "auto-edit" ? "auto-edit" : "ask");
  await host.send(PLAN_FOLLOW_UP);
}
