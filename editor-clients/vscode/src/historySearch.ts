// Full-text search over the workspace's sessions, for History. The daemon has no search method,
// so this reads each listed session's file (the daemon's session/list names them) and looks
// for the words in what was said: prompts, answers, tool output, summaries. Bounded: the newest
// MAX_SESSIONS sessions, the first MAX_FILE_BYTES of each, MAX_HITS matches. No `vscode` import.

import type { Json } from "./rpcClient";

export const MAX_SESSIONS = 200;
export const MAX_FILE_BYTES = 4 * 1024 * 1024;
export const MAX_HITS = 100;
const PER_SESSION = 5;

export interface Hit {
  sessionId: string;
  entryId: string;
  role: string; // user, assistant, toolResult …
  snippet: string; // one line around the match
  match: string; // the words as they are written there
}

// The searchable text of one entry of a session file, or "".
function entryText(entry: Json): string {
  if (entry.type === "compaction" || entry.type === "branch_summary") return String(entry.summary ?? "");
  if (entry.type !== "message") return "";
  const m = entry.message ?? {};
  if (m.role === "bashExecution") return `${m.command ?? ""}\n${m.output ?? ""}`;
  if (typeof m.content === "string") return m.content;
  return (Array.isArray(m.content) ? m.content : []).map((b: Json) =>
    b.type === "text" ? b.text : b.type === "toolCall" ? JSON.stringify(b.arguments ?? {}) : "").filter(Boolean).join("\n");
}

function snippet(text: string, at: number, length: number): string {
  const start = Math.max(0, at - 40);
  const end = Math.min(text.length, at + length + 80);
  return `${start > 0 ? "…" : ""}${text.slice(start, end).replace(/\s+/g, " ").trim()}${end < text.length ? "…" : ""}`;
}

// The matches of `query` (case-insensitive, as one phrase) in one session file's text.
export function searchFile(sessionId: string, fileText: string, query: string, limit = PER_SESSION): Hit[] {
  const wanted = query.trim().toLowerCase();
  if (!wanted) return [];
  const hits: Hit[] = [];
  // Plain words are written as they are in a JSON line: a line without them is not parsed.
  const plain = /^[A-Za-z0-9 _.,:;!?()-]+$/.test(wanted);
  for (const line of fileText.split("\n")) {
    if (hits.length >= limit) break;
    if (plain && !line.toLowerCase().includes(wanted)) continue;
    let entry: Json;
    try { entry = JSON.parse(line); } catch { continue; } // a torn last line
    const text = entryText(entry);
    const at = text.toLowerCase().indexOf(wanted);
    if (at < 0 || !entry.id) continue;
    hits.push({ sessionId, entryId: entry.id, role: entry.message?.role ?? entry.type, snippet: snippet(text, at, wanted.length),
                match: text.slice(at, at + wanted.length) });
  }
  return hits;
}

// Searches the sessions (newest first, as listed) with `read(file)` giving a file's first bytes as text.
export async function searchSessions(sessions: Json[], query: string,
                                     read: (file: string) => Promise<string>): Promise<{ hits: Hit[]; searched: number; capped: boolean }> {
  const hits: Hit[] = [];
  const listed = sessions.filter((s) => !s.damaged);
  const some = listed.slice(0, MAX_SESSIONS);
  for (const session of some) {
    if (hits.length >= MAX_HITS) break;
    const text = await read(session.file).catch(() => "");
    hits.push(...searchFile(session.sessionId, text, query, Math.min(PER_SESSION, MAX_HITS - hits.length)));
  }
  return { hits, searched: some.length, capped: listed.length > some.length || hits.length >= MAX_HITS };
}
