// The agent's plan (its update_plan calls, the `plan_updated` event) as a checklist pinned above the
// chat's input: a head with how many steps are done, then each step with its state (✓ completed,
// ▸ in progress, ○ pending) and the agent's explanation. It is the session's plan now, so each event
// replaces it whole (a replayed session, a rewind or navigate sends the plan as it stood there; an
// empty one hides it). The head folds it; a plan that becomes all done folds itself.

import { element } from "./render";
import type { PlanEntry } from "../protocol";

const MARKS: Record<string, string> = { completed: "✓", in_progress: "▸", pending: "○" };
const SAID: Record<string, string> = { completed: "done", in_progress: "in progress", pending: "to do" };

export class PlanView {
  private shown = "";

  constructor(private readonly box: HTMLDetailsElement) {
    box.open = true;
  }

  show(entries: PlanEntry[], explanation?: string | null): void {
    const key = JSON.stringify([entries, explanation ?? ""]);
    if (key === this.shown) return; // the same plan again (a replay): the user's fold stays
    const wasDone = this.allDone();
    this.shown = key;
    this.box.hidden = entries.length === 0;
    const done = entries.filter((e) => e.status === "completed").length;
    const current = entries.find((e) => e.status === "in_progress");
    const head = element("summary", "plan-head");
    head.append(element("span", "plan-title", "Plan"), element("span", "plan-count", `${done}/${entries.length}`));
    if (current) head.append(element("span", "plan-now", current.step));
    const list = element("ol", "plan-steps");
    for (const entry of entries) {
      const item = element("li", `plan-step ${entry.status}`);
      item.dataset.status = entry.status;
      item.title = SAID[entry.status] ?? entry.status;
      item.append(element("span", "plan-mark", MARKS[entry.status] ?? "○"), element("span", "plan-text", entry.step));
      list.append(item);
    }
    this.box.replaceChildren(head, ...(explanation ? [element("div", "plan-why", explanation)] : []), list);
    this.box.dataset.done = String(done);
    this.box.dataset.total = String(entries.length);
    if (!wasDone && this.allDone()) this.box.open = false; // finished: out of the way, one click shows it
    else if (wasDone && !this.allDone()) this.box.open = true; // a new plan
  }

  clear(): void {
    this.show([]);
  }

  private allDone(): boolean {
    const total = Number(this.box.dataset.total ?? "0");
    return total > 0 && Number(this.box.dataset.done) === total;
  }
}
