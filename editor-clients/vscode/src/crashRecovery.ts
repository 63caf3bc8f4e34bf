// When the daemon dies (killed, crashed) the chat says so in one line, and once the client has started
// it again the same session is loaded and redrawn; an answer that was streaming stays on screen marked
// cut off (it never reached the session file), with Continue when the run was interrupted. After
// repeated quick deaths the client stops restarting: the line then offers Restart.

import type { DaemonExit, PiClient } from "./rpcClient";
import type { AgentEvent, AssistantMessage, SessionLoadResult } from "./protocol";
import type { ToPage } from "./chatPage";

export interface RecoveryHost {
  post(message: ToPage): void;
  show(event: AgentEvent): void; // an event drawn in the chat and kept for a view opened later
  sessionId(): string | undefined; // the session on screen
  partialAnswer(): string | undefined; // the text of the answer streaming now
  settle(): void; // nothing runs any more: not busy
  // the session loaded again: replayed into a fresh chat, or (attach mode) caught up from the last event drawn
  redraw(sessionId: string): Promise<SessionLoadResult>;
  log(text: string): void;
}

export const CUT_OFF = "cut off: pi-daemon stopped before this answer ended";

export class CrashRecovery {
  private back?: Promise<void>;
  private comeBack?: () => void;
  private exit?: DaemonExit;
  private partial?: string;
  private session?: string;

  constructor(private readonly host: RecoveryHost) {}

  attach(client: PiClient): void {
    client.onExit((exit) => this.died(exit));
    client.onRestart(() => this.restarted());
  }

  // Resolves once a dead daemon is back with its session (at once when none died).
  ready(): Promise<void> {
    return this.back ?? Promise.resolve();
  }

  // The user's "Restart" after the restarts gave up; prompts meanwhile wait for it.
  async revive(client: PiClient): Promise<void> {
    this.back ??= new Promise((resolve) => (this.comeBack = resolve));
    try {
      await client.revive();
    } catch (error) {
      const done = this.comeBack;
      this.back = this.comeBack = undefined;
      done?.();
      throw error;
    }
  }

  private died(exit: DaemonExit): void {
    const how = exit.signal ? `killed by ${exit.signal}` : exit.code === null ? "it could not be started again" : `exit code ${exit.code}`;
    if (!this.back) {
      this.partial = this.host.partialAnswer();
      this.session = this.host.sessionId();
      this.back = new Promise((resolve) => (this.comeBack = resolve));
    }
    this.exit = exit;
    this.host.settle();
    this.host.log(`pi-daemon stopped (${how})${exit.restarting ? "; starting it again" : "; not restarted"}\n`);
    if (exit.restarting) this.host.post({ type: "notice", text: `pi-daemon stopped (${how}); starting it again…` });
    else {
      this.host.post({ type: "notice", text: `pi-daemon stopped (${how}) again soon after starting, so it was not restarted.`,
                       actions: ["Restart", "Show Log"] });
      this.comeBack?.(); // prompts now fail with "not running" instead of waiting
      this.back = undefined;
    }
  }

  private async restarted(): Promise<void> {
    const exit = this.exit;
    const how = exit?.signal ? `killed by ${exit.signal}` : exit?.code != null ? `exit code ${exit.code}` : "it had stopped";
    let interrupted = false;
    let goesOn = false; // the run outlived the connection (a server's, in attach mode): its answer is not cut off
    let notLoaded: string | undefined; // why the session could not be loaded again: said, not hidden in the log
    try {
      const loaded = this.session ? await this.host.redraw(this.session) : undefined;
      interrupted = Boolean(loaded?.interrupted);
      goesOn = Boolean(loaded?.state.isStreaming);
    } catch (error: any) {
      notLoaded = String(error.message ?? error);
      this.host.log(`reloading session ${this.session}: ${notLoaded}\n`);
    }
    const text = goesOn ? undefined : this.partial;
    if (text) {
      // Only what the chat draws of an answer: it never reached the daemon, which would have said the rest (usage, model …).
      const content = () => [{ type: "text" as const, text }];
      this.host.show({ type: "message_start", message: { role: "assistant", content: content() } as AssistantMessage });
      this.host.show({ type: "message_end", message: { role: "assistant", content: content(), stopReason: "error", errorMessage: CUT_OFF } as AssistantMessage });
    }
    const where = !this.session ? "nothing was lost"
      : notLoaded ? `this conversation could not be loaded again (${notLoaded}); it is kept, and History opens it`
      : "this conversation is loaded again";
    const said = goesOn ? `The connection to pi-daemon ended (${how}) and was made again; the run went on meanwhile.`
      : `pi-daemon stopped (${how}) and was restarted; ${where}.`;
    this.host.post({ type: "notice", text: said,
                     actions: interrupted || text ? ["Continue"] : [] });
    this.partial = this.session = this.exit = undefined;
    const done = this.comeBack;
    this.back = this.comeBack = undefined;
    done?.();
  }
}
