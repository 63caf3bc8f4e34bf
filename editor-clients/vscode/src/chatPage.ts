// The messages between the extension and a chat page (webview/chat.ts), the side bar's or an editor
// tab's. They are not the daemon's protocol; the protocol values they carry are typed by protocol.ts.

import type { AgentEvent, ContextItem, Image, UserAskResult } from "./protocol";
import type { StoredSubagent } from "./subagents";

// An event of a chat's transcript: the session's, a finished subagent from the session file, or a
// subagent's event as {child, event}.
export type TranscriptEvent = AgentEvent | StoredSubagent;
export type TranscriptItem = TranscriptEvent | { child: string; event: AgentEvent };

// To the page: its `type` says which (event, events, busy, queue, notice, input, …).
export interface ToPage {
  type: string;
  [key: string]: unknown;
}

// From the page.
export type FromPage =
  | { type: "ready" | "abort" | "files" }
  | { type: "send"; text: string; context?: ContextItem[]; images?: Image[] }
  | { type: "removeQueued"; queueId: string }
  | { type: "rewind"; entryId: string; text?: string }
  | { type: "setMode" | "executePlan"; mode: string }
  | { type: "noticeAction"; action: string }
  | { type: "diff"; diff: string; toolCallId?: string }
  | { type: "openFile"; path: string; line?: number }
  | { type: "copy"; text: string }
  | { type: "abortSubagent"; sessionId: string }
  | { type: "openSubagent"; sessionId: string; title?: string }
  | { type: "permissionAnswer"; sessionId: string; toolCallId: string; answer: string; reason?: string }
  | { type: "questionAnswer"; sessionId: string; toolCallId: string; result: UserAskResult }
  | { type: "process"; action: "reveal" | "output" | "kill"; id: string };
