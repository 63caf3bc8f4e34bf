// The background processes the agent started (bash with `background: true`, issue #39), as the
// Background Processes view and the chat's bash cards show them: what process/list answers (on connect, after
// the daemon came back) kept in step by the process_started / process_exited events; and a
// process's output followed through process/output from where it was last read.
// No `vscode` import: node --test drives this module against the real daemon.

import type { AgentEvent, ProcessInfo } from "./protocol";
import type { PiClient } from "./rpcClient";

export type { ProcessInfo };

// How long, in words a glance reads: "8s", "2m 05s", "1h 03m".
export function duration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, "0")}m`;
}

// The process's state and how long it ran: "running · 2m 05s", "exited 0 · ran 3s", "stopped · ran 40s".
export function statusLine(p: ProcessInfo, now = Date.now()): string {
  const ran = duration((p.endedAt ?? now) - p.startedAt);
  if (p.status === "running") return `running · ${ran}`;
  if (p.status === "killed") return `stopped · ran ${ran}`;
  return `exited ${p.exitCode ?? "?"} · ran ${ran}`;
}

// The same, short, for a row beside the command (the row's icon says whether it runs): "2m 05s", "exit 0 · 3s", "stopped · 40s".
export function shortStatus(p: ProcessInfo, now = Date.now()): string {
  const ran = duration((p.endedAt ?? now) - p.startedAt);
  if (p.status === "running") return ran;
  return `${p.status === "killed" ? "stopped" : `exit ${p.exitCode ?? "?"}`} · ${ran}`;
}

// A command on one line, cut to `max` characters.
export function shortCommand(command: string, max = 60): string {
  const line = command.replace(/\s+/g, " ").trim();
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

// `news` says "running" of a process already known to have ended: an older state, not applied.
const outdated = (known: ProcessInfo | undefined, news: ProcessInfo): boolean =>
  known !== undefined && known.status !== "running" && news.status === "running";

export class ProcessList {
  private readonly byId = new Map<string, ProcessInfo>();
  private listeners: (() => void)[] = [];

  onChange(listener: () => void): () => void {
    this.listeners.push(listener);
    return () => (this.listeners = this.listeners.filter((l) => l !== listener));
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }

  // Running ones first, then the latest started first.
  get all(): ProcessInfo[] {
    return [...this.byId.values()].sort((a, b) =>
      Number(b.status === "running") - Number(a.status === "running") || b.startedAt - a.startedAt);
  }

  get running(): ProcessInfo[] {
    return this.all.filter((p) => p.status === "running");
  }

  get(id: string): ProcessInfo | undefined {
    return this.byId.get(id);
  }

  // A process's news, from an event or an answer; an end already known is not undone by an older "running"
  // (an answer tells the state when its request was served, and an exit event written meanwhile can come first).
  update(process: ProcessInfo): void {
    if (outdated(this.byId.get(process.id), process)) return;
    this.byId.set(process.id, process);
    this.changed();
  }

  // true when the event was about a process.
  apply(event: AgentEvent): boolean {
    if (event.type !== "process_started" && event.type !== "process_exited") return false;
    this.update(event.process);
    return true;
  }

  // What the daemon has now, in place of what was known (a daemon started again has none of the old
  // one's: they ended with it, clear() forgot them, and its ids start again at p1); an end already known
  // stays, as in update().
  async load(client: PiClient): Promise<void> {
    const { processes } = await client.request("process/list", {});
    const known = new Map(this.byId);
    this.byId.clear();
    for (const p of processes) this.byId.set(p.id, outdated(known.get(p.id), p) ? known.get(p.id)! : p);
    this.changed();
  }

  // The daemon went away: what it ran ended with it (the next load says what the new one has).
  clear(): void {
    this.byId.clear();
    this.changed();
  }

  async kill(client: PiClient, id: string): Promise<ProcessInfo> {
    const process = await client.request("process/kill", { id });
    this.update(process);
    return process;
  }
}

// A process's output as read so far: the text (at most `keep` characters: its tail, the head
// dropped with a note), the offset to read on from, and whether the daemon still has more to say.
export class FollowedOutput {
  text = "";
  next = 0;
  status = "running";
  exitCode?: number | null;
  dropped = false; // the daemon's buffer or `keep` lost the start: the whole output is in its file

  constructor(readonly id: string, private readonly keep = 1_000_000) {}

  get done(): boolean {
    return this.status !== "running";
  }

  // Reads what came since the last read; true when something changed.
  async read(client: PiClient): Promise<boolean> {
    const answer = await client.request("process/output", { id: this.id, since: this.next });
    const before = [this.next, this.status];
    this.dropped ||= answer.truncated;
    this.text += answer.text;
    if (this.text.length > this.keep) {
      this.text = this.text.slice(this.text.length - this.keep);
      this.dropped = true;
    }
    this.next = answer.next;
    this.status = answer.status;
    this.exitCode = answer.exitCode;
    return before[0] !== this.next || before[1] !== this.status;
  }

  // The document's text: the output, a first line when its start is not here, a last line once it ended.
  shown(outputPath?: string): string {
    const head = this.dropped ? `[the start of the output is not shown${outputPath ? `; all of it is in ${outputPath}` : ""}]\n` : "";
    const end = this.status === "running" ? "" : this.status === "killed" ? "\n[stopped]"
      : this.status === "exited" ? `\n[exited with code ${this.exitCode ?? "?"}]` : "\n[no longer followed: the daemon that ran it ended]";
    return head + this.text + (end && this.text && !this.text.endsWith("\n") ? "\n" : "") + end.trimStart();
  }
}
