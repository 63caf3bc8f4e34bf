// A `/compact` that did not compact fails with an error that says why, as its compaction_end's
// errorMessage does (docs/protocol.md, `compact`); the chat has drawn that line already
// (webview/compaction.ts), so the reply is not said again in a toast and "/compact" does not come
// back into the input. Any other failure (busy, the daemon gone) is still the caller's to show.

import type { TranscriptItem } from "./chatPage";

export function compactionSaid(text: string, error: unknown, events: readonly TranscriptItem[]): boolean {
  if (!/^\/compact(\s|$)/.test(text.trim())) return false;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== -32003 || typeof message !== "string") return false;
  for (let i = events.length - 1; i >= 0; i--) {
    const event = events[i];
    if ("type" in event && event.type === "compaction_end")
      return Boolean(event.errorMessage && message.includes(event.errorMessage));
  }
  return false;
}
