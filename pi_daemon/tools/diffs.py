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

import bisect
import difflib
import hashlib
import operator
from collections import Counter
from dataclasses import dataclass, field
from itertools import compress, repeat

_Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2), as SequenceMatcher.get_opcodes

CONTEXT = 3


@dataclass
class Hunk:
    id: str
    old_start: int  # 1-based, as in a unified diff header
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    # 0-based spans of the changed lines (context excluded): before[b1:b2] became after[a1:a2]
    changed: tuple[int, int, int, int] = (0, 0, 0, 0)


@dataclass
class FileDiff:
    path: str
    status: str  # added | modified | deleted
    hunks: list[Hunk] = field(default_factory=list)
    diff: str = ""


def split_lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def _range(start: int, count: int) -> str:
    # unified diff convention: an empty range names the line before it
    return f"{start if count else start - 1},{count}" if count != 1 else f"{start}"


def _anchors(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """Patience diff's anchors: lines that occur once in each, in their longest common order.
    Built from C-level pieces (Counter, dict, sorted): this is the hot path of a long file."""
    in_old, in_new = Counter(old), Counter(new)
    where_old = dict(zip(old, range(len(old))))
    # the lines unique to both, in new's order; each step iterates in C, not in a Python loop
    both = list(map(operator.and_, map(operator.eq, map(in_new.__getitem__, new), repeat(1)),
                    map(operator.eq, map(in_old.get, new), repeat(1))))
    olds = list(map(where_old.__getitem__, compress(new, both)))
    pairs = list(zip(olds, compress(range(len(new)), both)))
    if olds == sorted(olds):  # the usual case: nothing moved
        return pairs
    tails: list[int] = []  # longest increasing subsequence of old positions (pairs are in new order)
    links: list[int] = [-1] * len(pairs)
    ends: list[int] = []
    for n, i in enumerate(olds):
        k = bisect.bisect_left(tails, i)
        if k == len(tails):
            tails.append(i)
            ends.append(n)
        else:
            tails[k], ends[k] = i, n
        links[n] = ends[k - 1] if k else -1
    chain, n = [], ends[-1] if ends else -1
    while n >= 0:
        chain.append(pairs[n])
        n = links[n]
    return chain[::-1]


def opcodes(old: list[str], new: list[str]) -> difflib.SequenceMatcher[str]:
    """A matcher of ``old`` to ``new`` whose opcodes are already known. Lines unique to both
    anchor the match (patience diff); difflib only runs on the short gaps between anchors,
    so a few edits in a long file cost little."""
    ops: list[_Opcode] = []

    def gap(a1: int, a2: int, b1: int, b2: int) -> None:
        if a1 == a2 and b1 == b2:
            return
        if a1 == a2 or b1 == b2:
            ops.append(("insert" if a1 == a2 else "delete", a1, a2, b1, b2))
            return
        part = difflib.SequenceMatcher(None, old[a1:a2], new[b1:b2], autojunk=False)
        ops.extend((tag, x1 + a1, x2 + a1, y1 + b1, y2 + b1) for tag, x1, x2, y1, y2 in part.get_opcodes())

    pairs = _anchors(old, new)
    # where a run of consecutive anchors breaks (either side jumps), again iterated in C
    olds, news = list(map(operator.itemgetter(0), pairs)), list(map(operator.itemgetter(1), pairs))
    jumps = map(operator.or_, map(operator.ne, map(operator.sub, olds[1:], olds), repeat(1)),
                map(operator.ne, map(operator.sub, news[1:], news), repeat(1)))
    starts = [0, *compress(range(1, len(pairs)), jumps)]
    a = b = 0
    for first, last in zip(starts, [*starts[1:], len(pairs)]):
        if first == last:
            continue
        (i, j), (i2, j2) = pairs[first], pairs[last - 1]  # a run of consecutive anchors: equal lines
        gap(a, i, b, j)
        ops.append(("equal", i, i2 + 1, j, j2 + 1))
        a, b = i2 + 1, j2 + 1
    gap(a, len(old), b, len(new))
    merged: list[_Opcode] = []
    for op in ops:
        if merged and op[0] == "equal" == merged[-1][0]:
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        elif op[1] != op[2] or op[3] != op[4]:
            merged.append(op)
    matcher: difflib.SequenceMatcher[str] = difflib.SequenceMatcher(None, (), (), autojunk=False)  # only a holder
    # get_opcodes returns its cached private attribute when set; the stubs do not declare it
    matcher.opcodes = merged or [("equal", 0, 0, 0, 0)]  # type: ignore[attr-defined]
    return matcher


def file_diff(path: str, before: str | None, after: str | None) -> FileDiff:
    """The diff of ``path`` from ``before`` to ``after`` (None: the file does not exist)."""
    status = "added" if before is None else "deleted" if after is None else "modified"
    old, new = split_lines(before), split_lines(after)
    out = [f"--- {'/dev/null' if before is None else 'a/' + path}\n",
           f"+++ {'/dev/null' if after is None else 'b/' + path}\n"]
    hunks: list[Hunk] = []
    seen: dict[str, int] = {}
    for group in opcodes(old, new).get_grouped_opcodes(CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        header = f"@@ -{_range(i1 + 1, i2 - i1)} +{_range(j1 + 1, j2 - j1)} @@"
        body = []
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                body += [" " + line for line in old[a1:a2]]
                continue
            body += ["-" + line for line in old[a1:a2]]
            body += ["+" + line for line in new[b1:b2]]
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


@dataclass
class Reverted:
    text: str
    reverted: list[str]
    conflicts: list[tuple[str, str]]  # (hunk id, why)


def revert_hunks(before: str | None, after: str | None, current: str, diff: FileDiff,
                 hunk_ids: set[str] | None) -> Reverted:
    """``current`` with the chosen hunks (all when ``hunk_ids`` is None) of ``diff`` taken back."""
    old, new, now = split_lines(before), split_lines(after), split_lines(current)
    user_ops = [op for op in opcodes(new, now).get_opcodes() if op[0] != "equal"]
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
