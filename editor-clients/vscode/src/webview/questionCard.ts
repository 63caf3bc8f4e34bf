// A question the agent asks the user (its ask_user call, the daemon's `user/ask`), as a card in the
// chat under that call: the question, its options (one click answers a single choice; checkboxes and
// Submit for several), a text field when the agent takes words of the user's own, and Dismiss. The
// extension posts `question` when the daemon asks and `questionDone` once it is answered or withdrawn
// (the run stopped, nobody answered in time); the card posts `questionAnswer` with the UserAskResult.

import { element } from "./render";
import type { UserAskParams, UserAskResult } from "../protocol";

const cards = (sessionId: string, toolCallId: string) =>
  `.question[data-session="${CSS.escape(sessionId)}"][data-id="${CSS.escape(toolCallId)}"]`;

export function showQuestion(log: HTMLElement, tools: Map<string, HTMLElement>, ask: UserAskParams,
                             answer: (result: UserAskResult) => void): void {
  if (log.querySelector(cards(ask.sessionId, ask.toolCallId))) return;
  const card = element("div", "m question");
  card.dataset.session = ask.sessionId;
  card.dataset.id = ask.toolCallId;
  card.setAttribute("role", "group");
  card.setAttribute("aria-label", "pi asks you");
  card.append(element("div", "q-head", "pi asks"), element("div", "q-text", ask.question));
  const send = (result: UserAskResult) => {
    card.querySelectorAll<HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement>("button, input, textarea")
      .forEach((n) => (n.disabled = true));
    answer(result);
  };
  const typed = () => (card.querySelector<HTMLTextAreaElement>("textarea.q-input")?.value ?? "").trim();
  const checked = () => [...card.querySelectorAll<HTMLInputElement>("input.q-check:checked")].map((c) => c.value);
  const options = element("div", ask.multiSelect ? "q-options multi" : "q-options");
  for (const option of ask.options) {
    if (ask.multiSelect) {
      const row = element("label", "q-option");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.className = "q-check";
      box.value = option.label;
      row.append(box, element("span", "q-label", option.label));
      if (option.description) row.append(element("span", "q-desc", option.description));
      options.append(row);
    } else {
      const button = element("button", "q-option");
      button.append(element("span", "q-label", option.label));
      if (option.description) button.append(element("span", "q-desc", option.description));
      button.addEventListener("click", () => send({ outcome: "answered", selected: [option.label], ...(typed() ? { text: typed() } : {}) }));
      options.append(button);
    }
  }
  if (ask.options.length) card.append(options);
  if (ask.allowText) {
    const field = document.createElement("textarea");
    field.className = "q-input";
    field.rows = 2;
    field.placeholder = ask.options.length ? "Or answer in your own words…" : "Your answer…";
    field.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        submit.click();
      }
      e.stopPropagation(); // Escape here is not the chat's Stop
    });
    card.append(field);
  }
  const actions = element("div", "q-actions");
  const submit = element("button", "q-submit", ask.multiSelect ? "Submit" : "Send") as HTMLButtonElement;
  submit.title = "Answer with what you chose and typed";
  submit.addEventListener("click", () => {
    const selected = checked();
    if (!selected.length && !typed()) return;
    send({ outcome: "answered", ...(selected.length ? { selected } : {}), ...(typed() ? { text: typed() } : {}) });
  });
  const dismiss = element("button", "q-dismiss", "Dismiss");
  dismiss.title = "Do not answer; pi is told you dismissed the question";
  dismiss.addEventListener("click", () => send({ outcome: "dismissed" }));
  if (ask.multiSelect || ask.allowText) actions.append(submit);
  actions.append(dismiss);
  card.append(actions);
  const tool = tools.get(ask.toolCallId);
  if (tool) tool.after(card);
  else log.append(card);
  (card.querySelector<HTMLElement>("textarea.q-input, .q-option") ?? submit).focus();
}

export function questionDone(log: HTMLElement, sessionId: string, toolCallId: string): void {
  log.querySelectorAll(cards(sessionId, toolCallId)).forEach((n) => n.remove());
}
