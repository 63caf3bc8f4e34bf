// Compaction in the chat, where it happened in the conversation: while the daemon summarises
// the older messages a line with a spinner says so and why (you asked, the context was nearly
// full, it overflowed the window); when it is done a divider "Conversation compacted: ~12.3k →
// 3.1k tokens" whose summary unfolds (folded at first); a compaction that failed, was refused
// or cannot happen is a warning line with the daemon's reason, never nothing. A replayed
// session draws the divider from its compactionSummary message.

import type { CompactionEnd, CompactionStart, CompactionSummaryMessage } from "../protocol";
import { element, textBlock } from "./render";

const WHY: Record<string, string> = {
  manual: "as you asked",
  threshold: "the context was nearly full",
  overflow: "the context overflowed the model's window",
};

// 950 → "950", 12_345 → "12.3k", 3_000 → "3k".
function tokenCount(n: number): string {
  return n < 1000 ? String(Math.round(n)) : `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`;
}

function divider(title: string, summary: string, entryId?: string): HTMLElement {
  const node = element("details", "m compaction done") as HTMLDetailsElement;
  const head = element("summary", "");
  head.append(element("span", "label", title));
  node.append(head, textBlock(summary));
  node.title = "The older messages were replaced by this summary in the model's context; click to read it";
  if (entryId) node.dataset.entryId = entryId;
  node.addEventListener("toggle", () => { if (node.open) node.scrollIntoView({ block: "nearest" }); }); // unfolded at the bottom: seen
  return node;
}

export function compactionStarted(root: HTMLElement, event: CompactionStart): void {
  const line = element("div", "m compaction running");
  line.dataset.reason = event.reason;
  const why = WHY[event.reason];
  line.append(element("span", "spinner"),
              element("span", "label", `Compacting the conversation: summarising the older messages${why ? ` (${why})` : ""}…`));
  root.append(line);
}

// The end replaces its start's line (a start not seen, as in a view opened late, is no matter).
export function compactionEnded(root: HTMLElement, event: CompactionEnd): void {
  const running = [...root.querySelectorAll<HTMLElement>(":scope > .compaction.running")].pop();
  let shown: HTMLElement;
  if (event.result) {
    const r = event.result;
    const retry = event.willRetry ? " · retrying the request" : "";
    shown = divider(`Conversation compacted: ~${tokenCount(r.tokensBefore)} → ${tokenCount(r.estimatedTokensAfter)} tokens${retry}`,
                    r.summary, r.entryId);
  } else if (event.aborted) {
    shown = element("div", "m compaction note", "Compaction stopped: the conversation is as it was.");
  } else {
    shown = element("div", "m compaction warning");
    shown.setAttribute("role", "status");
    shown.append(element("span", "icon", "⚠"),
                 element("span", "label", `Conversation not compacted: ${event.errorMessage ?? "the compaction failed"}`));
  }
  shown.dataset.reason = event.reason;
  if (running) running.replaceWith(shown);
  else root.append(shown);
}

// In a replay the context starts with the summary of what was compacted.
export function compactedSummary(message: CompactionSummaryMessage): HTMLElement {
  return divider(`Conversation compacted: ~${tokenCount(message.tokensBefore)} tokens summarised`, message.summary);
}
