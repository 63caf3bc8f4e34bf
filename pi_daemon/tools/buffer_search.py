"""``grep`` over unsaved editor buffers: their text replaces the disk's in the results.

ripgrep reads the disk. For the files the editor reports as open with unsaved changes
(see :meth:`.file_access.FileAccess.modified_buffers`), its lines are dropped and the
buffer's text is searched here instead, with Python's ``re`` (ripgrep's syntax and
Python's agree on the common constructs: classes, groups, alternation, anchors,
repetition).
"""

from __future__ import annotations

import fnmatch
import re

from ..json_types import JsonObject


def _wanted(shown: str, glob: str | None) -> bool:
    if not glob:
        return True
    negate = glob.startswith("!")
    pattern = glob[1:] if negate else glob
    hit = fnmatch.fnmatch(shown, pattern) if "/" in pattern else fnmatch.fnmatch(shown.rsplit("/", 1)[-1], pattern)
    return hit != negate


def buffer_lines(shown: str, text: str, args: JsonObject) -> list[str]:
    """``path:N:text`` lines (``path-N-text`` for context, ``--`` between groups) of one buffer."""
    pattern = re.escape(args["pattern"]) if args.get("literal") else args["pattern"]
    try:
        regex = re.compile(pattern, re.IGNORECASE if args.get("ignoreCase") else 0)
    except re.error:
        return []
    lines = text.splitlines()
    hits = [n for n, line in enumerate(lines) if regex.search(line)]
    around = args.get("context") or 0
    shown_lines: dict[int, bool] = {}
    for n in hits:
        for k in range(max(0, n - around), min(len(lines), n + around + 1)):
            shown_lines[k] = shown_lines.get(k, False) or k == n
    out: list[str] = []
    last = None
    for k in sorted(shown_lines):
        if last is not None and k > last + 1 and around:
            out.append("--")
        sep = ":" if shown_lines[k] else "-"
        out.append(f"{shown}{sep}{k + 1}{sep}{lines[k]}")
        last = k
    return out


def with_buffers(lines: list[str], buffers: dict[str, str], args: JsonObject) -> list[str]:
    """rg's ``lines`` with the buffered files' lines replaced by matches in their text."""
    names = tuple(f"{shown}{sep}" for shown in buffers for sep in (":", "-"))
    out = [line for line in lines if not line.startswith(names)]
    while out and out[-1] == "--":
        out.pop()
    for shown, text in sorted(buffers.items()):
        if not _wanted(shown, args.get("glob")):
            continue
        found = buffer_lines(shown, text, args)
        if found and out and args.get("context"):
            out.append("--")
        out += found
    return out
