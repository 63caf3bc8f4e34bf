// How the resume / delete pickers and History show a stored session: a one-line title (its name, else its
// first message, whitespace folded, cut at a readable length) and when it was last used, in
// local time ("today 14:05", "Dec 3 09:12"). No `vscode` import: node --test runs it.

import type { SessionSummary } from "./protocol";

const TITLE_LENGTH = 70;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

export function sessionTitle(session: Pick<SessionSummary, "name" | "firstMessage">): string {
  const line = (session.name || session.firstMessage || "").replace(/\s+/g, " ").trim() || "(empty)";
  return line.length > TITLE_LENGTH ? `${line.slice(0, TITLE_LENGTH - 1)}…` : line;
}

const two = (n: number) => String(n).padStart(2, "0");
const sameDay = (a: Date, b: Date) => a.getFullYear() === b.getFullYear() && a.getMonth() === b.getMonth() && a.getDate() === b.getDate();

// An ISO timestamp in the local time zone, as near as it is to `now`.
export function localTime(iso: string, now = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return iso;
  const clock = `${two(at.getHours())}:${two(at.getMinutes())}`;
  const yesterday = new Date(now.getFullYear(), now.getMonth(), now.getDate() - 1);
  if (sameDay(at, now)) return `today ${clock}`;
  if (sameDay(at, yesterday)) return `yesterday ${clock}`;
  const day = `${MONTHS[at.getMonth()]} ${at.getDate()}`;
  return at.getFullYear() === now.getFullYear() ? `${day} ${clock}` : `${day} ${at.getFullYear()} ${clock}`;
}

// A quick pick item for a session (its summary kept as `session`).
export function sessionItem(session: SessionSummary, now = new Date()): { label: string; description: string; session: SessionSummary } {
  const count = `${session.messageCount} message${session.messageCount === 1 ? "" : "s"}`;
  return { label: sessionTitle(session), description: `${localTime(session.updatedAt, now)} · ${count}`, session };
}
