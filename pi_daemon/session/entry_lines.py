"""Reading a session file's lines: the header, then one entry per line (what :mod:`.store` opens).

The file is read a block at a time and its lines are read where they lie in the block (no
copy split into lines), so a 200 MB session is not held in memory beside its entries.

What only looks at a file's lines (``session/list``, ``session/search``) reads them through
:func:`line_runs`: whole lines a run at a time, and a line longer than a cap passed over
without being held (:class:`LongLine` says where it was), so one enormous line costs a pass
over its bytes and no more memory than a block.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import stat
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

import orjson

from .. import json_read

VERSION = 3
MAX_SESSION_BYTES = 512 << 20  # a session file is read whole to open it; past this it is not written

# Entries that are not part of the conversation tree: they never move the leaf.
SIDE_ENTRIES = ("queue_add", "queue_done", "leaf", "label", "session_settings", "turn_changes", "turn_review",
                "rewind", "rewind_end", "subagent")
BLOCK = 1 << 24  # a session file is read this much at a time
# The longest line session/search reads (a user message or an answer): a line is held whole to
# be parsed, about three times over (its bytes, their lower case, the text), so this keeps one
# pathological line to about 64 MiB more. A prompt with large images can be longer; it is
# passed over and reported, never dropped without a word (docs/protocol.md, session/search).
MAX_LINE_BYTES = 16 << 20
HEAD_BYTES = 512  # what is kept of a line passed over: enough to say what kind of entry it is


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while a session file is read: reading builds a tree of
    new objects (no cycles) that each collection would scan again, which took about a third
    of the time of loading a long session. The next young collection scans what was read
    once (about 6 ms for 10,000 entries). What was read is not moved past the collector
    (``gc.freeze``): the daemon keeps its start-up objects frozen (``cli.settle_heap``), and
    freezing would keep whatever else is alive then, cycles and all, for good."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


class SessionFileError(Exception):
    """The file is missing, unreadable or not a session file; the text says which."""


def check_header(path: Path, data: bytes, first_nl: int) -> dict[str, Any]:
    try:
        header = json_read.loads(data[: first_nl if first_nl >= 0 else len(data)])
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("type") != "session" or first_nl < 0:
        raise SessionFileError(f"{path} is not a pi-daemon session file (no session header on line 1)")
    version = header.get("version")
    if type(version) is not int or version < 1:
        raise SessionFileError(f"{path} has no valid format version in its header (got {version!r})")
    if version > VERSION:
        raise SessionFileError(f"{path} is in session format version {version}, newer than this daemon reads "
                               f"({VERSION}): open it with a newer pi-daemon")
    if not isinstance(header.get("id"), str) or not header["id"]:
        raise SessionFileError(f"{path} has no session id in its header")
    return header


Parsed = tuple[dict[str, Any], list[dict[str, Any]], int, list[int], list[dict[str, Any]]]


def parse(path: Path, blocks: Iterable[bytes]) -> Parsed:
    """Header, entries, the offset where the last complete line ends, entry line numbers and
    skipped lines, from the file's bytes given a block at a time (a line may span blocks).

    Entries whose parent is an unreadable line are given, in memory, the tree entry read
    just before them as parent (appends chain to the leaf, so that is where they hung).
    """
    header: dict[str, Any] | None = None
    entries: list[dict[str, Any]] = []
    lines: list[int] = []
    skipped: list[dict[str, Any]] = []
    ids: set[str] = set()
    last_tree: str | None = None
    line_no = 1
    good_end = 0  # the file offset where ``carry`` starts: the end of the last complete line
    carry = b""  # a line not yet ended
    parts: list[bytes] = []  # the blocks it went on in: joined once it ends, not copied at each
    garbled: tuple[int, int] | None = None  # (line, length) of an unreadable line that may be the last
    for block in blocks:
        if header is not None and carry and b"\n" not in block:
            parts.append(block)
            continue
        data = b"".join([carry, *parts, block]) if carry else block
        parts = []
        start = 0
        if header is None:
            first_nl = data.find(b"\n")
            if first_nl < 0:
                carry = data
                continue
            header = check_header(path, data, first_nl)
            start = first_nl + 1
        final = data.rfind(b"\n")
        if final < start:  # no line ends in it (after the header)
            good_end += start
            carry = data[start:]
            continue
        # orjson reads a line as the json module would unless the block holds a 20-digit number
        # or orjson refuses the line (a lone surrogate, NaN).
        read = orjson.loads if not json_read.long_number(data) else lambda line: json_read.loads(bytes(line))
        view = memoryview(data)
        while start <= final:
            end = data.find(b"\n", start)
            line_no += 1
            line, start = view[start:end], end + 1
            if garbled is not None:  # a line follows it: it is not the last
                skipped.append({"line": garbled[0], "reason": "not valid JSON"})
                garbled = None
            if not line:
                continue
            try:
                entry = read(line)
            except ValueError:
                text = bytes(line)
                if text.isspace():
                    continue
                try:
                    entry = json_read.loads(text)
                except (ValueError, RecursionError):
                    garbled = (line_no, len(line))
                    continue
            if type(entry) is dict and entry.get("type") not in SIDE_ENTRIES:
                entry_id, parent = entry.get("id"), entry.get("parentId")
                if not (type(entry_id) is str and entry_id not in ids and (parent is None or parent in ids)
                        and type(entry.get("type")) is str):  # the common case, checked quickly
                    reason = entry_problem(entry, ids)
                    if reason is not None:
                        skipped.append({"line": line_no, "reason": reason})
                        continue
                    if parent is not None and parent not in ids:
                        entry = {**entry, "parentId": last_tree}
                ids.add(entry_id)  # type: ignore[arg-type]  # a str: the quick check or _entry_problem said so
                last_tree = entry_id
            elif type(entry) is not dict:
                skipped.append({"line": line_no, "reason": "not a JSON object"})
                continue
            entries.append(entry)
            lines.append(line_no)
        good_end += final + 1
        carry = data[final + 1:]
    carry = b"".join([carry, *parts])
    if header is None:
        check_header(path, carry, -1)  # raises: no header line
    if garbled is not None:
        if carry:  # a torn line follows it (cut off): it was not the last
            skipped.append({"line": garbled[0], "reason": "not valid JSON"})
        else:
            good_end -= garbled[1] + 1  # a garbled last line: cut off
    assert header is not None
    return header, entries, good_end, lines, skipped


def entry_problem(entry: Any, ids: set[str]) -> str | None:
    """Why a parsed line cannot be an entry, or None."""
    if not isinstance(entry, dict):
        return "not a JSON object"
    kind = entry.get("type")
    if not isinstance(kind, str):
        return "no entry type"
    if kind in SIDE_ENTRIES:
        return None
    entry_id = entry.get("id")
    if not isinstance(entry_id, str):
        return f"a {kind} entry without a string id"
    if entry_id in ids:
        return f"a second entry with id {entry_id!r}"
    parent = entry.get("parentId")
    if parent is not None and not isinstance(parent, str):
        return "parentId is not a string"
    return None


def file_blocks(fd: int, path: Path) -> tuple[int, Iterator[bytes]]:
    """The size of the regular file open at ``fd`` (kept open), at most :data:`MAX_SESSION_BYTES`,
    and its bytes, read a block at a time as they are asked for."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    if info.st_size > MAX_SESSION_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_SESSION_BYTES >> 20} MiB", str(path))

    return info.st_size, blocks(fd, info.st_size)


def blocks(fd: int, size: int, block: int = BLOCK) -> Iterator[bytes]:
    """The first ``size`` bytes of the file open at ``fd``, ``block`` bytes at a time (fewer if
    it is shorter now): how every reader of session files reads them, never whole."""
    at = 0
    while at < size:
        data = os.pread(fd, min(block, size - at), at)
        if not data:
            return
        at += len(data)
        yield data


class LongLine(NamedTuple):
    """A line longer than the cap of :func:`line_runs`, passed over without being held."""

    number: int  # 1-based; 0 when the reader was not asked to count lines
    size: int  # its bytes, without a newline
    head: bytes  # its first :data:`HEAD_BYTES` bytes (after the newline that ends the line before it)


def line_runs(fd: int, size: int, block: int, cap: int, numbered: bool = False) -> Iterator[bytes | LongLine]:
    """The first ``size`` bytes of the file open at ``fd`` as runs of whole lines, in order. Each
    run but the file's first starts with the newline that ends the line before it (so a line is
    found by its ``\\n{`` start) and leaves its own last newline to the next. A line longer than
    ``cap`` (at least ``block``: a line inside one block comes in a run) comes as a
    :class:`LongLine` instead: its bytes are read once and let go, never copied block after
    block nor held. ``numbered``: long lines carry their line number (counting costs a pass
    over the runs, so only a reader that reports lines asks for it)."""
    pending: list[bytes] = []  # the current line so far (and the newline before it)
    held = 0  # their length
    lead = 0  # 1 once the current line has a newline before it (every line but the first)
    number = 1  # the current line's
    long: LongLine | None = None  # the current line, being passed over
    for data in blocks(fd, size, block):
        while True:
            if long is not None:
                end = data.find(b"\n")
                long = long._replace(size=long.size + (len(data) if end < 0 else end))
                if end < 0:
                    break
                yield long
                long, number, lead = None, number + 1, 1
                pending, held, data = [b"\n"], 1, data[end + 1:]
            first = data.find(b"\n")  # where the current line ends
            if held - lead + (len(data) if first < 0 else first) > cap:
                long = LongLine(number if numbered else 0, held - lead, _head(pending + [data], lead))
                pending, held = [], 0
                continue
            if first < 0:
                pending.append(data)
                held += len(data)
                break
            cut = data.rfind(b"\n")
            run = b"".join(pending + [data[:cut]]) if pending else data[:cut]
            if numbered:
                number += run.count(b"\n") - lead + 1
            if run:
                yield run
            pending, held, lead = [data[cut:]], len(data) - cut, 1
            break
    if long is not None:
        yield long
    elif held > lead:
        yield b"".join(pending)


def _head(pieces: list[bytes], lead: int) -> bytes:
    """The first :data:`HEAD_BYTES` of a line given by its pieces, after its leading newline."""
    head = bytearray()
    for piece in pieces:
        head += piece[:HEAD_BYTES + lead - len(head)]
        if len(head) > HEAD_BYTES:
            break
    return bytes(head[lead:])
