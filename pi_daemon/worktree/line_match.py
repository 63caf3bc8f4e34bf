"""Which lines of a file's old text match which of its new text: the opcodes hunks are cut from.

:func:`opcodes` is the reference: patience diff's anchors (lines that occur once in each
text), in their longest common order, split the texts into gaps that difflib matches.

:func:`opcodes_of_texts` gives the same opcodes from the two texts without splitting them
into lines, for the usual case of a long file with a few edits (counting every line of
both texts is most of the reference's cost, and proves what comparing the strings shows at
once: long stretches are identical):

1. The texts are compared as strings (in C): stretches identical in both, in whole lines,
   are *common*; what lies between them are *changed regions*.
2. Each changed region is widened, a line at a time, through the common lines around it
   until an anchor bounds it on each side. A common line is in both texts, so only the
   changed regions can make its two counts differ: it is an anchor when the old text has no
   other occurrence of it (one search) and no changed region's new lines hold it.
3. Inside each widened region the reference's own steps run on that region's lines, with
   anchors decided on the whole texts (a changed line is an anchor only when it occurs once
   in each whole text). The regions' bounds are anchors of the whole-file chain too, and
   between two anchors of one common stretch both texts hold the same lines, which the
   reference matches as equal: so outside the widened regions all is equal, as here.

It returns None, and the caller uses the reference, when the texts break lines on anything
but "\\n" (``str.splitlines`` knows ten line breaks), when the anchors of a region would
not come in order (a line moved: the reference then picks a longest increasing subsequence
over the whole file), or when the searches would cost more than counting every line (see
:data:`MAX_REGIONS`). ``tests/tools/test_line_match.py`` compares both on random edits.
"""

from __future__ import annotations

import bisect
import difflib
import operator
from collections import Counter
from itertools import accumulate, compress, repeat
from typing import Callable

Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2), as SequenceMatcher.get_opcodes

_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"  # the line breaks of str.splitlines besides "\n" ...
_WIDE_BREAKS = "\x85\u2028\u2029"  # ... and those beyond ASCII
_WINDOWS = (1024, 8192)  # characters read ahead to find where a changed region ends
# Each region, and each common line looked at while widening one, costs a search of the whole
# text: past these many (a file rewritten throughout, or of a few repeated lines) the
# reference, which counts every line once, is the cheaper way.
MAX_REGIONS = 64
MAX_LOOKS = 256


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


def _walk(old: list[str], new: list[str], pairs: list[tuple[int, int]]) -> list[Opcode]:
    """The opcodes (unmerged) of ``old`` to ``new`` given the anchor chain ``pairs``: runs of
    consecutive anchors are equal, difflib matches the gaps between them."""
    ops: list[Opcode] = []

    def gap(a1: int, a2: int, b1: int, b2: int) -> None:
        if a1 == a2 and b1 == b2:
            return
        if a1 == a2 or b1 == b2:
            ops.append(("insert" if a1 == a2 else "delete", a1, a2, b1, b2))
            return
        part = difflib.SequenceMatcher(None, old[a1:a2], new[b1:b2], autojunk=False)
        ops.extend((tag, x1 + a1, x2 + a1, y1 + b1, y2 + b1) for tag, x1, x2, y1, y2 in part.get_opcodes())

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
    return ops


def _merged(ops: list[Opcode]) -> list[Opcode]:
    merged: list[Opcode] = []
    for op in ops:
        if merged and op[0] == "equal" == merged[-1][0]:
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        elif op[1] != op[2] or op[3] != op[4]:
            merged.append(op)
    return merged or [("equal", 0, 0, 0, 0)]


def opcodes(old: list[str], new: list[str]) -> list[Opcode]:
    """The reference: the opcodes of ``old`` to ``new``. Lines unique to both anchor the match
    (patience diff); difflib only runs on the short gaps between anchors."""
    return _merged(_walk(old, new, _anchors(old, new)))


# --- the same, from the texts -------------------------------------------------------


def _plain(text: str) -> bool:
    """Whether "\\n" is the text's only line break (then lines are what splitting on it gives)."""
    if any(c in text for c in _BREAKS):
        return False
    return text.isascii() or not any(c in text for c in _WIDE_BREAKS)


def _same_for(a: str, pa: int, b: str, pb: int) -> int:
    """How many characters ``a[pa:]`` and ``b[pb:]`` share at their start (compared in C)."""
    limit = min(len(a) - pa, len(b) - pb)
    n, width = 0, 512
    while n < limit:
        width = min(width, limit - n)
        if a[pa + n:pa + n + width] != b[pb + n:pb + n + width]:
            break
        n += width
        width *= 2
    else:
        return limit
    lo, hi = n, n + width  # the first lo characters are the same, the first hi are not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[pa + lo:pa + mid] == b[pb + lo:pb + mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end + 1


def _line_start(text: str, pos: int) -> int:
    """The start of the line before the one starting at ``pos``."""
    return text.rfind("\n", 0, pos - 1) + 1


def _find_line(text: str, line: str, start: int) -> int:
    """The first position from ``start`` (a line start) where ``line`` is a whole line, or -1."""
    if text.startswith(line, start) and (line.endswith("\n") or start + len(line) == len(text)):
        return start
    at = text.find("\n" + line, start)
    while at >= 0 and not line.endswith("\n") and at + 1 + len(line) != len(text):
        at = text.find("\n" + line, at + 1)  # a last line without "\n" matches only at the end
    return at + 1 if at >= 0 else -1


def _elsewhere(text: str, line: str, at: int) -> bool:
    """Whether ``line`` occurs as a whole line in ``text`` other than at ``at``."""
    if not line.endswith("\n"):
        return False  # only the text's last line lacks "\n": one place
    if at != 0 and text.startswith(line):
        return True
    found = text.find("\n" + line)
    while found >= 0:
        if found + 1 != at:
            return True
        found = text.find("\n" + line, found + 1)
    return False


def _resync(a: str, ia: int, b: str, ib: int) -> tuple[int, int]:
    """Where a changed region starting at (``ia``, ``ib``) may end: line starts past it in
    both texts where a line of one meets the same line of the other. Any answer is correct
    (the regions are widened and matched by the reference's steps); a close one is cheap."""
    for window in _WINDOWS:
        ahead_a, ahead_b = a[ia:ia + window].splitlines(True), b[ib:ib + window].splitlines(True)
        if ia + window < len(a):
            ahead_a.pop()  # maybe a part of a line
        if ib + window < len(b):
            ahead_b.pop()
        first_b: dict[str, int] = {}
        for y, line in enumerate(ahead_b):
            first_b.setdefault(line, y)
        best: tuple[int, int, int] | None = None  # (lines skipped, x, y)
        for x, line in enumerate(ahead_a):
            y = first_b.get(line, -1)
            if y >= 0 and (x, y) != (0, 0) and (best is None or x + y < best[0]):
                best = (x + y, x, y)
            if best is not None and x >= best[0]:
                break
        if best is not None:
            _, x, y = best
            return ia + sum(map(len, ahead_a[:x])), ib + sum(map(len, ahead_b[:y]))
    # farther than the window: a long insertion or deletion; look for the region's first lines
    found: list[tuple[int, int]] = []
    for line, pos in zip(ahead_a[:3], accumulate(map(len, ahead_a), initial=ia)):
        at = _find_line(b, line, ib)
        if at > ib:
            found.append((pos, at))
    for line, pos in zip(ahead_b[:3], accumulate(map(len, ahead_b), initial=ib)):
        at = _find_line(a, line, ia)
        if at > ia:
            found.append((at, pos))
    if found:
        return min(found, key=lambda f: f[0] - ia + f[1] - ib)
    return len(a), len(b)


def _regions(a: str, b: str) -> list[tuple[int, int, int, int]] | None:
    """Changed regions ``(ia, ja, ib, jb)``: ``a[ia:ja]`` became ``b[ib:jb]``, all at line
    starts; between two regions (and before the first, after the last) the texts are equal.
    None: more than :data:`MAX_REGIONS`."""
    out: list[tuple[int, int, int, int]] = []
    pa = pb = 0
    while True:
        same = _same_for(a, pa, b, pb)
        if pa + same == len(a) and pb + same == len(b):
            return out
        cut = a.rfind("\n", pa, pa + same)
        ia = pa if cut < 0 else cut + 1
        ib = pb + (ia - pa)
        ja, jb = _resync(a, ia, b, ib)
        out.append((ia, ja, ib, jb))
        if len(out) > MAX_REGIONS:
            return None
        if ja == len(a) and jb == len(b):
            return out
        pa, pb = ja, jb


def changed_regions(a: str, b: str) -> list[tuple[int, int, int, int]] | None:
    """Where two texts differ, as :func:`_regions` finds it (for a delta of one against the
    other): outside the regions they are equal. None: in more than :data:`MAX_REGIONS` places."""
    return _regions(a, b)


class _Span:
    """A widened region: old text ``a[sa:ea]`` (lines from ``la``), new ``b[sb:eb]`` (from ``lb``)."""

    __slots__ = ("sa", "ea", "sb", "eb", "la", "lb", "old", "new")

    def __init__(self, sa: int, ea: int, sb: int, eb: int) -> None:
        self.sa, self.ea, self.sb, self.eb = sa, ea, sb, eb
        self.la = self.lb = 0
        self.old: list[str] = []
        self.new: list[str] = []


class _TooFar(Exception):
    """Widening the regions looked at more than :data:`MAX_LOOKS` lines."""


def _spans(a: str, b: str, regions: list[tuple[int, int, int, int]],
           changed_new: set[str]) -> list[_Span]:
    """The regions, each widened to the anchors around it (merged when they meet)."""
    looks = 0

    def anchor(pos: int) -> bool:  # the common line at ``pos`` of ``a``
        nonlocal looks
        looks += 1
        if looks > MAX_LOOKS:
            raise _TooFar
        line = a[pos:_line_end(a, pos)]
        return line not in changed_new and not _elsewhere(a, line, pos)

    spans: list[_Span] = []
    k = 0
    while k < len(regions):
        ia, ja, ib, jb = regions[k]
        start = ia
        while start > 0 and not anchor(_line_start(a, start)):
            start = _line_start(a, start)
        end = ja
        while True:
            if k + 1 < len(regions) and regions[k + 1][0] == end:
                k += 1
                ja, jb = regions[k][1], regions[k][3]
                end = ja
            elif end == len(a) or anchor(end):
                break
            else:
                end = _line_end(a, end)
        # common text keeps the offset between the texts of the region next to it
        spans.append(_Span(start, end, start + (ib - ia), end + (jb - ja)))
        k += 1
    return spans


def opcodes_of_texts(a: str, b: str) -> tuple[list[Opcode], Callable[[int, int], list[str]],
                                               Callable[[int, int], list[str]]] | None:
    """The reference's opcodes of ``a.splitlines(True)`` to ``b.splitlines(True)``, and two
    functions giving old lines ``[i:j]`` and new lines ``[i:j]`` for lines within three of a
    change; None where this way does not apply (see the module's docstring)."""
    if not (_plain(a) and _plain(b)):
        return None
    regions = _regions(a, b)
    if regions is None:
        return None
    changed_old: Counter[str] = Counter()
    changed_new: Counter[str] = Counter()
    for ia, ja, ib, jb in regions:
        changed_old.update(a[ia:ja].splitlines(True))
        changed_new.update(b[ib:jb].splitlines(True))
    try:
        spans = _spans(a, b, regions, set(changed_new))
    except _TooFar:
        return None
    ops: list[Opcode] = []
    pos = line = 0  # a line count of ``a`` up to ``pos``
    old_at = new_at = 0  # where the last span ended, in lines
    for span in spans:
        line += a.count("\n", pos, span.sa)
        pos = span.sa
        span.la, span.lb = line, line + (new_at - old_at)
        span.old, span.new = a[span.sa:span.ea].splitlines(True), b[span.sb:span.eb].splitlines(True)
        pairs = _span_anchors(a, b, span, changed_old, changed_new)
        if pairs is None:
            return None
        ops.append(("equal", old_at, span.la, new_at, span.lb))
        ops.extend((tag, i1 + span.la, i2 + span.la, j1 + span.lb, j2 + span.lb)
                   for tag, i1, i2, j1, j2 in _walk(span.old, span.new, pairs))
        old_at, new_at = span.la + len(span.old), span.lb + len(span.new)
        line, pos = old_at, span.ea
    total = line + a.count("\n", pos) + (1 if pos < len(a) and not a.endswith("\n") else 0)
    ops.append(("equal", old_at, total, new_at, total + (new_at - old_at)))
    return (_merged(ops), _lines(a, [(s.la, s.sa, s.ea, s.old) for s in spans]),
            _lines(b, [(s.lb, s.sb, s.eb, s.new) for s in spans]))


def _span_anchors(a: str, b: str, span: _Span, changed_old: Counter[str],
                  changed_new: Counter[str]) -> list[tuple[int, int]] | None:
    """The anchors inside a span (span-relative), as the whole-file chain has them; None when
    they are out of order. The common lines a span was widened over are not anchors; a
    changed line is when it occurs once in each whole text."""
    maybe = {line for line in changed_new if line in changed_old}
    if not maybe:
        return []
    if len(maybe) > MAX_LOOKS:
        return None
    in_old, in_new = Counter(span.old), Counter(span.new)
    starts_old = [span.sa, *accumulate(map(len, span.old), initial=span.sa)][1:]
    starts_new = [span.sb, *accumulate(map(len, span.new), initial=span.sb)][1:]
    where_old = {line: i for i, line in enumerate(span.old) if line in maybe}
    pairs = []
    for j, line in enumerate(span.new):
        if line in maybe and in_new[line] == 1:
            if in_old[line] != 1:
                if in_old[line] == 0:
                    return None  # maybe paired with a line of another span: the reference decides
                continue
            i = where_old[line]
            if not _elsewhere(a, line, starts_old[i]) and not _elsewhere(b, line, starts_new[j]):
                pairs.append((i, j))
    olds = [i for i, _ in pairs]
    return pairs if olds == sorted(olds) else None


def _lines(text: str, spans: list[tuple[int, int, int, list[str]]]) -> Callable[[int, int], list[str]]:
    """Lines ``[i:j]`` of ``text``, for ranges that reach at most a few lines past a span;
    ``spans`` are (first line, start, end, lines) of the text's part of each span."""
    firsts = [span[0] for span in spans]

    def at(line: int) -> int:  # the position where ``line`` starts
        k = bisect.bisect_right(firsts, line) - 1
        near = [(line, 0, line)]  # from the text's start
        for first, start, end, lines in spans[max(k, 0):k + 2]:
            if line < first:
                near.append((first - line, start, -(first - line)))
            elif line > first + len(lines):
                near.append((line - first - len(lines), end, line - first - len(lines)))
            else:
                return start + sum(map(len, lines[:line - first]))
        _, pos, steps = min(near)
        for _ in range(-steps):
            pos = _line_start(text, pos)
        for _ in range(steps):
            pos = _line_end(text, pos)
        return pos

    def lines(i: int, j: int) -> list[str]:
        return text[at(i):at(j)].splitlines(True) if i < j else []

    return lines
