// The agent's questions to the user (its ask_user tool; the daemon's `user/ask`): each is posted as a
// card to the chat that shows its session (a subagent's: its parent's chat) and waits there for the
// answer; a chat opened later is shown the questions still waiting; withdrawn by the daemon (the run
// stopped, nobody answered in time), the card goes. The status bar says a question waits, in case the
// chat is not in sight. No `vscode` import but through `remind`: node --test drives it.

import type { ToPage } from "./chatPage";
import type { UserAskParams, UserAskResult } from "./protocol";

interface Waiting {
  ask: UserAskParams;
  answer(result: UserAskResult): void;
}

export class UserQuestions {
  private readonly waiting = new Map<string, Waiting>(); // by sessionId and toolCallId

  // `post` sends to the chat showing a session; `remind` shows a reminder until the returned disposer runs.
  constructor(private readonly post: (sessionId: string, message: ToPage) => void,
              private readonly remind: (text: string) => () => void = () => () => undefined) {}

  private chat(ask: UserAskParams): string {
    return ask.parentSessionId ?? ask.sessionId;
  }

  ask(ask: UserAskParams, cancelled: Promise<unknown>): Promise<UserAskResult> {
    const key = JSON.stringify([ask.sessionId, ask.toolCallId]);
    const forget = this.remind(`$(question) pi asks you: ${ask.question.replace(/\s+/g, " ").slice(0, 60)} (in the chat)`);
    const answered = new Promise<UserAskResult>((resolve) => this.waiting.set(key, { ask, answer: resolve }));
    const done = () => {
      forget();
      if (!this.waiting.delete(key)) return;
      this.post(this.chat(ask), { type: "questionDone", sessionId: ask.sessionId, toolCallId: ask.toolCallId });
    };
    cancelled.then(done);
    answered.then(done);
    this.post(this.chat(ask), { type: "question", ask });
    return answered;
  }

  // The chat's answer.
  answer(sessionId: string, toolCallId: string, result: UserAskResult): void {
    this.waiting.get(JSON.stringify([sessionId, toolCallId]))?.answer(result);
  }

  // A chat opened (again): the questions still waiting in the sessions it shows.
  repost(shows: (sessionId: string) => boolean, post: (message: ToPage) => void): void {
    for (const { ask } of this.waiting.values()) if (shows(this.chat(ask))) post({ type: "question", ask });
  }
}
