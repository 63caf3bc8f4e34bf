"""The session file: a header line, then one JSON entry per line, forming a tree.

Entries are kept as the dicts read from the file, so entry types and message roles of
newer versions survive untouched. Each append is one ``write`` of one complete line to
a file opened for appending; :meth:`SessionStore.sync` makes it durable (fsync). On
open, a torn last line (a crash mid-write) is cut off and saved next to the file, never
glued to the next append. An advisory lock keeps a second process from writing the
same file.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import secrets
from pathlib import Path
from typing import Any, Iterator

import orjson

VERSION = 3

# Entries that are not part of the conversation tree: they never move the leaf.
SIDE_ENTRIES = ("queue_add", "queue_done", "leaf", "label")


class SessionFileError(Exception):
    """The file is missing, unreadable or not a session file; the text says which."""


class SessionLocked(Exception):
    """Another process has the session open for writing."""


def iso_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def file_stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H-%M-%S-%fZ")


def _dumps(entry: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(entry) + b"\n"
    except TypeError:  # a lone surrogate or an int beyond 64 bits
        return json.dumps(entry, separators=(",", ":")).encode("ascii") + b"\n"


class SessionStore:
    def __init__(self, path: Path, header: dict[str, Any], entries: list[dict[str, Any]], fd: int) -> None:
        self.path = path
        self.header = header
        self.entries = entries
        self.by_id: dict[str, dict[str, Any]] = {}
        self.leaf_id: str | None = None
        self._fd = fd
        self.torn_file: Path | None = None
        for entry in entries:
            self._index(entry)

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, session_id: str, cwd: str, parent: str | None = None,
               entries: list[dict[str, Any]] = ()) -> "SessionStore":
        path.parent.mkdir(parents=True, exist_ok=True)
        ignore = path.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("*\n")
        header: dict[str, Any] = {"type": "session", "version": VERSION, "id": session_id,
                                  "timestamp": iso_now(), "cwd": cwd}
        if parent:
            header["parentSession"] = parent
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            _lock(fd, path)
            _write_all(fd, _dumps(header) + b"".join(_dumps(e) for e in entries))
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, header, list(entries), fd)

    @classmethod
    def open(cls, path: Path) -> "SessionStore":
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise SessionFileError(f"no session file at {path}") from None
        except OSError as exc:
            raise SessionFileError(f"cannot open {path}: {exc.strerror}") from None
        try:
            _lock(fd, path)
            with open(path, "rb") as f:
                data = f.read()
            header, entries, good_end = _parse(path, data)
            store = cls(path, header, entries, fd)
            if good_end < len(data):
                store.torn_file = path.with_name(f"{path.name}.torn-{file_stamp()}")
                store.torn_file.write_bytes(data[good_end:])
                os.ftruncate(fd, good_end)
                os.fsync(fd)
            return store
        except BaseException:
            os.close(fd)
            raise

    # --- the tree ---------------------------------------------------------------------

    def _index(self, entry: dict[str, Any]) -> None:
        entry_id = entry.get("id")
        kind = entry.get("type")
        if kind == "leaf":
            self.leaf_id = entry.get("targetId")
        elif isinstance(entry_id, str) and kind not in SIDE_ENTRIES:
            self.by_id[entry_id] = entry
            self.leaf_id = entry_id

    def new_id(self) -> str:
        while True:
            candidate = secrets.token_hex(4)
            if candidate not in self.by_id:
                return candidate

    def append(self, entry_type: str, /, **fields: Any) -> dict[str, Any]:
        """Append an entry under the leaf (side entries: outside the tree)."""
        entry: dict[str, Any] = {"type": entry_type, "id": self.new_id()}
        if entry_type not in SIDE_ENTRIES:
            entry["parentId"] = self.leaf_id
        entry["timestamp"] = iso_now()
        entry.update(fields)
        _write_all(self._fd, _dumps(entry))
        self.entries.append(entry)
        self._index(entry)
        return entry

    def set_leaf(self, entry_id: str | None) -> None:
        """Move the current position (branching); recorded so it survives a restart."""
        self.append("leaf", targetId=entry_id)

    def branch(self, leaf_id: str | None = None) -> list[dict[str, Any]]:
        """Entries from the root to ``leaf_id`` (default: the leaf)."""
        out = []
        current = self.by_id.get(leaf_id if leaf_id is not None else self.leaf_id or "")
        seen = set()
        while current is not None and current["id"] not in seen:
            seen.add(current["id"])
            out.append(current)
            current = self.by_id.get(current.get("parentId") or "")
        out.reverse()
        return out

    def after(self, cursor: str | None) -> Iterator[dict[str, Any]]:
        """Entries in file order after the entry with id ``cursor`` (all when None)."""
        start = 0
        if cursor is not None:
            for n, entry in enumerate(self.entries):
                if entry.get("id") == cursor:
                    start = n + 1
                    break
            else:
                raise KeyError(cursor)
        return iter(self.entries[start:])

    # --- durability --------------------------------------------------------------------

    def sync(self) -> None:
        if self._fd >= 0:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            finally:
                os.close(self._fd)  # closing releases the lock
                self._fd = -1

    @property
    def closed(self) -> bool:
        return self._fd < 0


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise SessionLocked(f"session file {path} is open in another process") from None
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _parse(path: Path, data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Header, entries and the offset where the last complete, valid line ends."""
    first_nl = data.find(b"\n")
    try:
        header = orjson.loads(data[: first_nl if first_nl >= 0 else len(data)])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("type") != "session" or first_nl < 0:
        raise SessionFileError(f"{path} is not a pi-daemon session file (no session header on line 1)")
    entries: list[dict[str, Any]] = []
    pos, good_end = first_nl + 1, first_nl + 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            break  # a torn last line: cut off
        line = data[pos:nl]
        pos = nl + 1
        if not line.strip():
            good_end = pos
            continue
        try:
            entry = orjson.loads(line)
        except ValueError:
            if pos >= len(data):
                break  # a garbled last line: cut off
            continue  # a garbled line inside the file is skipped, and left as it is
        if isinstance(entry, dict):
            entries.append(entry)
        good_end = pos
    return header, entries, good_end
