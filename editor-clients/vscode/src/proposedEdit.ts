// The text a `write` or `edit` call would leave in its file, computed from the permission
// request's arguments and the file's current text (the open buffer, dirty or not), for the
// review diff shown before the user answers. `edit` follows the daemon's edit tool: each oldText
// found exactly (else with whitespace and quotes normalised line by line), once, no overlaps.
// No `vscode` import: node --test checks it against what the real daemon then writes.

type Json = any;

const QUOTES: Record<string, string> = { "‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " " };
const normal = (line: string) => line.replace(/[‘’“”\u00a0]/g, (c) => QUOTES[c]).replace(/[ \t]+/g, " ").trim();

function find(original: string, old: string): [number, number][] {
  const spans: [number, number][] = [];
  for (let i = original.indexOf(old); i >= 0; i = original.indexOf(old, i + 1)) spans.push([i, i + old.length]);
  if (spans.length) return spans;
  const lines = original.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const wanted = old.split("\n").map(normal);
  if (old.endsWith("\n")) wanted.pop();
  while (wanted.length && !wanted[wanted.length - 1]) wanted.pop();
  if (!wanted.length) return [];
  const offsets = [0];
  for (const line of lines) offsets.push(offsets[offsets.length - 1] + line.length);
  for (let n = 0; n + wanted.length <= lines.length; n++) {
    if (!wanted.every((w, k) => normal(lines[n + k].replace(/\n$/, "")) === w)) continue;
    let end = offsets[n + wanted.length];
    if (lines[n + wanted.length - 1].endsWith("\n") && !old.endsWith("\n")) end -= 1;
    spans.push([offsets[n], end]);
  }
  return spans;
}

// `current`: the file's text now (undefined: it does not exist). An error says why the call
// would fail, as the daemon would.
export function proposedText(toolName: string, args: Json, current: string | undefined): { text: string } | { error: string } {
  if (toolName === "write") return { text: String(args?.content ?? "") };
  if (toolName !== "edit") return { error: `${toolName} changes no file text` };
  if (current === undefined) return { error: `${args?.path} does not exist` };
  const original = current.replace(/\r\n?/g, "\n");
  const spans: [number, number, string, number][] = [];
  for (const [i, edit] of (Array.isArray(args?.edits) ? args.edits : []).entries()) {
    const found = find(original, String(edit?.oldText ?? ""));
    if (!found.length) return { error: `edit ${i + 1}: its oldText is not in the file` };
    if (found.length > 1) return { error: `edit ${i + 1}: its oldText matches ${found.length} places` };
    spans.push([found[0][0], found[0][1], String(edit?.newText ?? ""), i + 1]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let k = 1; k < spans.length; k++)
    if (spans[k][0] < spans[k - 1][1]) return { error: `edits ${spans[k - 1][3]} and ${spans[k][3]} overlap` };
  let text = original;
  for (const [start, end, newText] of [...spans].reverse()) text = text.slice(0, start) + newText + text.slice(end);
  return { text };
}
