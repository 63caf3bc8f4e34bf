// An edit's change shown as the editor's side-by-side diff: the text before it, taken back from the
// file's text now and the edit's unified diff (EditDetails.diff). No `vscode` import: node --test drives it.

const HUNK = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@/;

// The text before the edit, or undefined when `now` is not what the edit left (the file changed since).
export function textBefore(now: string, diff: string): string | undefined {
  const lines = now.split("\n");
  const out: string[] = [];
  let at = 0; // the next line of `now` not yet copied
  let inHunk = false;
  for (const line of diff.split("\n")) {
    const hunk = HUNK.exec(line);
    if (hunk) {
      const start = Number(hunk[2] ?? "1") === 0 ? Number(hunk[1]) : Number(hunk[1]) - 1;
      if (start < at || start > lines.length) return undefined;
      out.push(...lines.slice(at, start));
      at = start;
      inHunk = true;
    } else if (!inHunk || line.startsWith("\\")) continue; // the file names; "\ No newline at end of file"
    else if (line.startsWith("-")) out.push(line.slice(1));
    else if (line.startsWith("+") || line.startsWith(" ")) {
      if (lines[at] !== line.slice(1)) return undefined;
      if (line.startsWith(" ")) out.push(lines[at]);
      at++;
    } else if (line !== "") return undefined;
  }
  if (!inHunk) return undefined;
  return [...out, ...lines.slice(at)].join("\n");
}

// The file a diff names ("+++ b/<path>", the daemon's shown path: relative to the workspace, or absolute).
export function diffPath(diff: string): string | undefined {
  return /^\+\+\+ b\/(.*)$/m.exec(diff)?.[1];
}
