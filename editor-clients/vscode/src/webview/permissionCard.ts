// A write/edit waiting for the user's review, in the chat: under its tool call, what it would
// change (the right side of the diff is the user's to change first) and the answers (Accept, Reject, More… for the remembering ones, Show diff to open the
// review again). The extension posts `permission` when it asks and `permissionDone` once the
// request is answered or withdrawn; a click posts `permissionAnswer` back.

import { element } from "./render";

export interface PermissionAsk {
  sessionId: string; // a subagent's calls may have its parent's ids: a card is its session's and call's
  toolCallId: string;
  toolName: string;
  path: string;
}

const ANSWERS: [string, string, string][] = [ // label, answer, hint
  ["Accept", "accept", "Let pi make this change (as the diff's right side now reads)"],
  ["Reject", "reject", "Refuse this change; pi is told"],
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

export function permissionDone(log: HTMLElement, sessionId: string, toolCallId: string): void {
  log.querySelectorAll(cards(sessionId, toolCallId)).forEach((n) => n.remove());
}
