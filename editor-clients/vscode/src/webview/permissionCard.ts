// A write/edit waiting for the user's review, in the chat: under its tool call, what it would
// change (the right side of the diff is the user's to change first) and the answers (Accept, Reject,
// Reject with reason… (a field for the words pi is told), Reject and stop (no further tool runs, the
// run ends), More… for the remembering ones, Show diff to open the review again). The extension posts
// `permission` when it asks and `permissionDone` once the request is answered or withdrawn; a click
// posts `permissionAnswer` back.

import { element } from "./render";

export interface PermissionAsk {
  sessionId: string; // a subagent's calls may have its parent's ids: a card is its session's and call's
  toolCallId: string;
  toolName: string;
  path: string;
}

const ANSWERS: [string, string, string][] = [ // label, answer, hint
  ["Accept", "accept", "Let pi make this change (as the diff's right side now reads)"],
  ["Reject", "reject", "Refuse this change; pi is told and goes on"],
  ["Reject with reason…", "reason", "Refuse this change and tell pi why (your words are what it reads)"],
  ["Reject and stop", "stop", "Refuse this change and stop the run: no further tool runs"],
  ["More…", "choices", "Allow for this session, always allow or always reject (with the rule they keep)"],
  ["Show diff", "show", "Open the review diff again"],
];

const cards = (sessionId: string, toolCallId: string) =>
  `.permission[data-session="${CSS.escape(sessionId)}"][data-id="${CSS.escape(toolCallId)}"]`;

export function showPermission(log: HTMLElement, tools: Map<string, HTMLElement>, ask: PermissionAsk): void {
  if (log.querySelector(cards(ask.sessionId, ask.toolCallId))) return;
  const card = element("div", "m permission");
  card.dataset.session = ask.sessionId;
  card.dataset.id = ask.toolCallId;
  card.append(element("div", "said",
    `pi wants to ${ask.toolName} ${ask.path}: review the diff in the editor; revert hunks or edit its right side, then Accept.`));
  const buttons = element("div", "answers");
  for (const [label, answer, hint] of ANSWERS) {
    const button = element("button", `answer ${answer}`, label);
    button.dataset.answer = answer;
    button.title = hint;
    buttons.append(button);
  }
  card.append(buttons);
  const tool = tools.get(ask.toolCallId);
  if (tool) tool.after(card);
  else log.append(card);
}

// What a click on one of the card's answers sends; none while "Reject with reason…" shows its field
// (the field's Send gives the reason).
export function permissionAnswer(card: HTMLElement, answer: string): { answer: string; reason?: string } | undefined {
  if (answer === "reason") {
    if (!card.querySelector(".reason-form")) {
      const form = element("div", "reason-form");
      const field = document.createElement("textarea");
      field.className = "reason-text";
      field.rows = 2;
      field.placeholder = "Why not? pi reads this and goes on (Enter sends)";
      field.addEventListener("keydown", (e) => {
        e.stopPropagation(); // Escape here is not the chat's Stop
        if (e.key === "Enter" && !e.shiftKey) {
          e.preventDefault();
          send.click();
        }
      });
      const send = element("button", "answer send-reason", "Reject with this reason");
      send.dataset.answer = "reject-reason";
      form.append(field, send);
      card.append(form);
    }
    card.querySelector<HTMLTextAreaElement>(".reason-text")!.focus();
    return undefined;
  }
  if (answer === "reject-reason") {
    const reason = card.querySelector<HTMLTextAreaElement>(".reason-text")?.value.trim() ?? "";
    return reason ? { answer: "reject", reason } : undefined;
  }
  return { answer };
}

export function permissionDone(log: HTMLElement, sessionId: string, toolCallId: string): void {
  log.querySelectorAll(cards(sessionId, toolCallId)).forEach((n) => n.remove());
}
