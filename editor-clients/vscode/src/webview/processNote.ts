// Under a bash call that started a background process: a line saying it runs on (or how it ended,
// and how long it ran), naming the process, with Output and Stop. The extension posts `processes`
// (every process it knows, whenever one starts or ends); a click posts `process` with the action.

import { element } from "./render";
import { ProcessInfo, statusLine } from "../processes";

export class ProcessNotes {
  private known = new Map<string, ProcessInfo>();
  private listed = false; // a list came: a process not in it is no longer the daemon's

  constructor(private readonly log: HTMLElement, post: (message: unknown) => void) {
    log.addEventListener("click", (e) => {
      const button = (e.target as HTMLElement).closest(".process-note button") as HTMLButtonElement | null;
      if (!button) return;
      const id = (button.closest(".process-note") as HTMLElement).dataset.processId;
      post({ type: "process", action: button.dataset.processAction, id });
    });
    window.addEventListener("message", ({ data }) => {
      if (data?.type !== "processes") return;
      this.known = new Map((data.processes as ProcessInfo[]).map((p) => [p.id, p]));
      this.listed = true;
      this.log.querySelectorAll<HTMLElement>(".process-note").forEach((n) => this.draw(n));
    });
    // the durations of running ones move on
    setInterval(() => this.log.querySelectorAll<HTMLElement>(".process-note.running").forEach((n) => this.draw(n)), 1000);
  }

  // Under the call's block (once).
  attach(block: HTMLElement, processId: string): void {
    const next = block.nextElementSibling as HTMLElement | null;
    if (next?.classList.contains("process-note") && next.dataset.processId === processId) return;
    const note = element("div", "process-note");
    note.dataset.processId = processId;
    note.dataset.command = block.dataset.args ? JSON.parse(block.dataset.args).command : undefined;
    block.after(note);
    this.draw(note);
  }

  private draw(note: HTMLElement): void {
    const id = note.dataset.processId!;
    // the same id and command: a daemon started again numbers its processes from p1 again
    const known = this.known.get(id);
    const p = known && known.command === note.dataset.command ? known : undefined;
    const running = p?.status === "running";
    note.classList.toggle("running", running);
    const said = p ? `Background process ${id}: ${statusLine(p)}`
      : this.listed ? `Background process ${id}: no longer running` : `Background process ${id}`;
    const buttons: [string, string, string][] = p ? [["reveal", "Processes", "Show it in the Processes view"],
                                                     ["output", "Output", "Open its output (it follows while the process runs)"]] : [];
    if (running) buttons.push(["kill", "Stop", "Stop the process (SIGTERM, then SIGKILL after 2 s)"]);
    const shown = [said, ...buttons.map((b) => b[0])].join("|");
    if (note.dataset.shown === shown) return;
    note.dataset.shown = shown;
    note.replaceChildren(element("span", "process-status", said), ...buttons.map(([action, label, hint]) => {
      const button = element("button", `process-${action}`, label);
      button.dataset.processAction = action;
      button.title = hint;
      return button;
    }));
  }
}
