"""Line diffs of one file for review: hunks with stable ids, unified text, and reverting hunks.

A :class:`FileDiff` compares a file's content before a run with its content after it.
Its hunks are difflib's grouped opcodes with three lines of context, the same hunks
``diff -u`` shows. A hunk's id is a hash of the file's path and the hunk's lines (not
its position), so it stays the same while the file is untouched, and a hunk keeps its
id when another hunk of the file is reverted.

:func:`revert_hunks` takes hunks back out of the file's *current* content, which may
differ from the run's after-content (the user kept typing): each hunk is located in the
current text through a diff of after → current; a hunk whose changed lines the user has
since edited is a conflict and is left alone.
"""

from __future__ import annotations

import difflib
import hashlib
from typing import Callable

import attrs

from .line_match import Opcode, opcodes, opcodes_of_texts

CONTEXT = 3


@attrs.define
class Hunk:
    id: str
    old_start: int  # 1-based, as in a unified diff header
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    # 0-based spans of the changed lines (context excluded): before[b1:b2] became after[a1:a2]
    changed: tuple[int, int, int, int] = (0, 0, 0, 0)


@attrs.define
class FileDiff:
    path: str
    status: str  # added | modified | deleted
    hunks: list[Hunk] = attrs.field(factory=list)
    diff: str = ""


def split_lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def _range(start: int, count: int) -> str:
    # unified diff convention: an empty range names the line before it
    return f"{start if count else start - 1},{count}" if count != 1 else f"{start}"


def _grouped(ops: list[Opcode]) -> list[list[Opcode]]:
    """difflib's hunks (three lines of context) of the opcodes ``ops``."""
    holder: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, (), (), autojunk=False)
    # get_grouped_opcodes reads the cached private attribute when set; the stubs do not declare it
    holder.opcodes = ops  # type: ignore[attr-defined]
    return list(holder.get_grouped_opcodes(CONTEXT))


def _matched(before: str | None, after: str | None) -> tuple[list[Opcode], Callable[[int, int], list[str]],
                                                             Callable[[int, int], list[str]]]:
    """The opcodes of before → after, and the old and new lines ``[i:j]`` near changes."""
    fast = opcodes_of_texts(before or "", after or "")
    if fast is not None:
        return fast
    old, new = split_lines(before), split_lines(after)
    return opcodes(old, new), lambda i, j: old[i:j], lambda i, j: new[i:j]


def file_diff(path: str, before: str | None, after: str | None) -> FileDiff:
    """The diff of ``path`` from ``before`` to ``after`` (None: the file does not exist)."""
    status = "added" if before is None else "deleted" if after is None else "modified"
    ops, old_lines, new_lines = _matched(before, after)
    out = [f"--- {'/dev/null' if before is None else 'a/' + path}\n",
           f"+++ {'/dev/null' if after is None else 'b/' + path}\n"]
    hunks: list[Hunk] = []
    seen: dict[str, int] = {}
    for group in _grouped(ops):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        header = f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@"
        old, new = old_lines(i1, i2), new_lines(j1, j2)
        body = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                body += [" " + line for line in old[a1 - i1:a2 - i1]]
                continue
            body += ["-" + line for line in old[a1 - i1:a2 - i1]]
            body += ["+" + line for line in new[b1 - j1:b2 - j1]]
        body = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in body]
        changes = [op for op in group if op[0] != "equal"]
        changed = (changes[0][1], changes[-1][2], changes[0][3], changes[-1][4])
        digest = hashlib.sha1("\0".join([path, *body]).encode("utf-8", "surrogatepass")).hexdigest()[:12]
        n = seen.get(digest, 0)
        seen[digest] = n + 1
        hunk_id = digest if n == 0 else f"{digest}-{n}"
        hunks.append(Hunk(hunk_id, i1 + 1, i2 - i1, j1 + 1, j2 - j1, header, changed))
        out.append(header + "\n")
        out.extend(body)
    return FileDiff(path, status, hunks, "".join(out) if hunks else "")


@attrs.define
class Reverted:
    text: str
    reverted: list[str]
    conflicts: list[tuple[str, str]]  # (hunk id, why)


def revert_hunks(before: str | None, after: str | None, current: str, diff: FileDiff,
                 hunk_ids: set[str] | None) -> Reverted:
    """``current`` with the chosen hunks (all when ``hunk_ids`` is None) of ``diff`` taken back."""
    old, new, now = split_lines(before), split_lines(after), split_lines(current)
    user_ops = [op for op in opcodes(new, now) if op[0] != "equal"]
    edits: list[tuple[int, int, list[str]]] = []
    reverted, conflicts = [], []
    for hunk in diff.hunks:
        if hunk_ids is not None and hunk.id not in hunk_ids:
            continue
        b1, b2, a1, a2 = hunk.changed
        touched = [op for op in user_ops if op[1] < a2 and op[2] > a1  # overlaps the hunk's lines
                   or (op[1] == op[2] and a1 <= op[1] <= a2)  # an insertion inside or at its edges
                   or (a1 == a2 and op[1] <= a1 <= op[2])]  # the hunk deleted lines here; the user edited around
        if touched:
            conflicts.append((hunk.id, f"lines {hunk.new_start}-{hunk.new_start + max(hunk.new_lines, 1) - 1} "
                                       "were changed after the run"))
            continue
        shift = sum((op[4] - op[3]) - (op[2] - op[1]) for op in user_ops if op[2] <= a1)
        edits.append((a1 + shift, a2 + shift, old[b1:b2]))
        reverted.append(hunk.id)
    for start, end, lines in sorted(edits, reverse=True):
        now[start:end] = lines
    return Reverted("".join(now), reverted, conflicts)
