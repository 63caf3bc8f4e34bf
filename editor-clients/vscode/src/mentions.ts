// "@file" mentions in the chat input: the token being typed at the caret, the workspace files
// that match it (best first), inserting the chosen one, and the mentioned files a message
// sends as prompt context ({path}: the daemon renders each file after the text).
// No `vscode` import: the webview bundles it and node --test drives it.

export const MAX_SHOWN = 20;

export interface Mention {
  start: number; // where the "@" is
  query: string; // what follows it, up to the caret
}

// The "@…" being typed at the caret: an "@" at the start or after white space, no space since.
export function mentionAt(text: string, caret: number): Mention | undefined {
  const match = /(?:^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  if (!match) return undefined;
  return { start: caret - match[1].length - 1, query: match[1] };
}

// The files that contain the query (case-insensitive): a file name that starts with it first,
// then one that contains it, then a match in the folders; shorter paths first within each.
export function rankFiles(files: string[], query: string, max = MAX_SHOWN): string[] {
  const q = query.toLowerCase();
  const scored: [number, string][] = [];
  for (const path of files) {
    const lower = path.toLowerCase();
    const name = lower.slice(lower.lastIndexOf("/") + 1);
    const score = name.startsWith(q) ? 0 : name.includes(q) ? 1 : lower.includes(q) ? 2 : -1;
    if (score >= 0) scored.push([score, path]);
  }
  scored.sort((a, b) => a[0] - b[0] || a[1].length - b[1].length || (a[1] < b[1] ? -1 : 1));
  return scored.slice(0, max).map(([, path]) => path);
}

// The text with the mention at the caret replaced by "@path ", and the caret after it.
export function insertMention(text: string, caret: number, path: string): { text: string; caret: number } {
  const mention = mentionAt(text, caret);
  const start = mention ? mention.start : caret;
  const inserted = `@${path} `;
  return { text: text.slice(0, start) + inserted + text.slice(caret), caret: start + inserted.length };
}

// The chosen files still mentioned in the text, as prompt context.
export function mentionContext(text: string, chosen: Iterable<string>): { path: string }[] {
  return [...new Set(chosen)].filter((path) => text.includes(`@${path}`)).map((path) => ({ path }));
}
