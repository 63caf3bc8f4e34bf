"""The session file: a header line, then one JSON entry per line, forming a tree.

Entries are kept as the dicts read from the file, so entry types and message roles of
newer versions survive untouched. Each append is one ``write`` of one complete line to
a file opened for appending; :meth:`SessionStore.sync` makes it durable (fsync). On
open, a torn last line (a crash mid-write) is cut off and saved next to the file, never
glued to the next append. An advisory lock keeps a second process from writing the
same file.

A write that fails (disk full, I/O error) is cut back off the file, so the file stays a
sequence of complete lines and the next append starts on a fresh one. Lines that cannot
be read are left in the file as they are and set aside (:attr:`SessionStore.skipped`);
an entry whose parent was set aside hangs under that entry's own parent, or, when the
set-aside line is unreadable, under the tree entry written just before it. A file that
cannot be written (read-only folder or file system, or a file outside the session
folder) is opened read-only: it is read as it is and never modified.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import logging
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import orjson

from ..guard.safe_open import read_regular
from ..guard.state_folders import keep_out_of_git
from .blob_files import open_folder
from .entry_lines import (
    MAX_SESSION_BYTES,
    SIDE_ENTRIES,
    VERSION,
    Parsed,
    SessionFileError,
    collector_paused,
    file_blocks,
    parse,
)

__all__ = ["MAX_SESSION_BYTES", "SIDE_ENTRIES", "VERSION", "SessionFileError", "SessionLocked", "SessionReadOnly",
           "SessionStore", "SessionWriteError", "INDEXED_SIDE_ENTRIES", "collector_paused", "file_stamp", "iso_now",
           "storage_error"]

log = logging.getLogger(__name__)

# Side entries a store opened from its index answers for without reading the file: what opening
# the session reads (kept settings, an unfinished rewind).
INDEXED_SIDE_ENTRIES = ("session_settings", "rewind", "rewind_end")


class SessionLocked(Exception):
    """Another process has the session open for writing."""


class SessionReadOnly(Exception):
    """The session cannot be written: it was opened read-only; the text says why."""


class SessionWriteError(Exception):
    """Writing the session file failed (disk full, I/O error); nothing of the write remains."""

    def __init__(self, exc: OSError, path: Path, what: str = "write") -> None:
        self.errno_name = errno.errorcode.get(exc.errno or 0, "EIO")
        self.path = path
        super().__init__(f"cannot {what} the session file {path}: {exc.strerror or exc} ({self.errno_name})")

    def context(self, prefix: str) -> "SessionWriteError":
        """The same failure, its message starting with what it meant for the request."""
        exc = SessionWriteError(OSError(0, ""), self.path)
        exc.errno_name = self.errno_name
        exc.args = (f"{prefix}: {self}",)
        return exc


# Errors that mean "this place cannot be written", as opposed to "this write failed".
_READ_ONLY_ERRNOS = (errno.EROFS, errno.EACCES, errno.EPERM)


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
    def __init__(self, path: Path, header: dict[str, Any], entries: list[dict[str, Any]], fd: int, *,
                 size: int = 0, read_only: str | None = None, lines: list[int] | None = None,
                 skipped: list[dict[str, Any]] | None = None) -> None:
        self.path = path
        self.header = header
        self._entries = entries
        self._by_id: dict[str, dict[str, Any]] = {}
        self._leaf_id: str | None = None
        self.facts: Any = None  # a store opened from its index: what the full load found (.load_index.Facts)
        self.on_read: Callable[[SessionStore], None] | None = None  # once the entries of such a store are read
        self._unread = False  # opened from its index: the entries are read when first asked for
        self.before_close: Callable[[SessionStore], None] | None = None  # e.g. keep the index up to date
        self.indexed_size = -1  # the file's size when its index was last written
        self.read_as: tuple[int, int, bool] = (-1, 0, False)  # (size, messages, cut off) when a load read it whole
        self._fd = fd
        self._size = size  # bytes of complete lines: where a failed write is cut back to
        self._closed = False
        self.read_only = read_only  # why the file cannot be written, when it cannot
        self.has_file = True
        self.torn_file: Path | None = None
        self.skipped: list[dict[str, Any]] = skipped or []  # {line, reason}, in file order
        self._lines: Sequence[int | None] = lines or []  # line number of each entry read from the file
        self._moved: dict[str, str | None] = {}  # set-aside id -> where its children hang now
        # The message of each context entry read so far (.rebuild): read once, for the agent's
        # transcript and a replay alike. An entry never changes, so neither does its message.
        self.messages: dict[str, Any] = {}
        for entry in entries:
            self._index(entry)

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, session_id: str, cwd: str, parent: str | None = None,
               entries: Sequence[dict[str, Any]] = (), header_fields: dict[str, Any] | None = None) -> "SessionStore":
        """A new file; ``parent``: the file it was forked from; ``header_fields``: more header fields
        (a subagent's ``parentSessionId`` and ``parentToolCallId``)."""
        header: dict[str, Any] = {"type": "session", "version": VERSION, "id": session_id,
                                  "timestamp": iso_now(), "cwd": cwd}
        if parent:
            header["parentSession"] = parent
        header.update(header_fields or {})
        data = _dumps(header) + b"".join(_dumps(e) for e in entries)
        try:  # the folder comes with the workspace: one that is a symlink is not written through
            folder = open_folder(path.parent.parent, [path.parent.name], make=True)
        except OSError as exc:
            raise _folder_error(exc, path) from None
        try:
            keep_out_of_git(folder)
            fd = os.open(path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                         dir_fd=folder)
        except OSError as exc:
            raise storage_error(exc, path, "create") from None
        finally:
            os.close(folder)
        try:
            _lock(fd, path)
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException as exc:
            os.close(fd)
            path.unlink(missing_ok=True)  # a header-less or half-written file helps nobody
            if isinstance(exc, OSError):
                raise SessionWriteError(exc, path, "create") from None
            raise
        return cls(path, header, list(entries), fd, size=len(data))

    @classmethod
    def detached(cls, path: Path, session_id: str, cwd: str, reason: str) -> "SessionStore":
        """A session with no file, for a workspace whose session folder cannot be written."""
        header = {"type": "session", "version": VERSION, "id": session_id, "timestamp": iso_now(), "cwd": cwd}
        store = cls(path, header, [], -1, read_only=reason)
        store.has_file = False
        return store

    @classmethod
    def open(cls, path: Path, *, read_only: str | None = None,
             known: Callable[[Path, int], tuple[dict[str, Any], Any, int] | None] | None = None) -> "SessionStore":
        """Open a session file; read-only (``read_only`` says why) when asked or when it cannot be written.

        ``known``: for a writable file, ``(header, facts, size)`` when its index says what a full
        load would find (:func:`.load_index.read`); the store's entries are then read when first
        asked for (:meth:`read_all`)."""
        fd = -1
        if read_only is None:
            try:
                fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError as exc:
                if exc.errno not in _READ_ONLY_ERRNOS:
                    raise _cannot_open(exc, path) from None
                read_only = f"{path} cannot be written ({exc.strerror}): the session is open read-only"
        if known is not None and fd >= 0:
            try:
                _lock(fd, path)
                found = known(path, fd) if stat.S_ISREG(os.fstat(fd).st_mode) else None
            except BaseException:
                os.close(fd)
                raise
            if found is not None:
                header, facts, size = found
                store = cls(path, header, [], fd, size=size, skipped=list(facts.skipped))
                store.facts, store._unread, store.indexed_size = facts, True, size
                return store
        try:  # data, not a path to follow: a symlink, FIFO or device is refused, the size bounded
            if fd < 0:
                data = read_regular(path, MAX_SESSION_BYTES)
                size, blocks = len(data), iter([data])
            else:
                size, blocks = file_blocks(fd, path)
        except OSError as exc:
            if fd >= 0:
                os.close(fd)
            raise _cannot_open(exc, path) from None
        try:
            if fd >= 0:
                _lock(fd, path)
            header, entries, good_end, lines, skipped = _parse(path, blocks)
            store = cls(path, header, entries, fd, size=good_end, read_only=read_only, lines=lines, skipped=skipped)
            if good_end < size and fd >= 0:
                store._cut_torn_tail(os.pread(fd, size - good_end, good_end))
            return store
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise

    def _cut_torn_tail(self, tail: bytes) -> None:
        torn = self.path.with_name(f"{self.path.name}.torn-{file_stamp()}")
        try:
            torn.write_bytes(tail)
        except OSError as exc:  # no room to keep it aside: leave the file as it is
            torn.unlink(missing_ok=True)
            self.read_only = (f"the torn last line of {self.path} could not be saved aside ({exc.strerror}): "
                              "the session is open read-only")
            return
        self.torn_file = torn
        os.ftruncate(self._fd, self._size)
        os.fsync(self._fd)

    # --- the entries, read when first asked for when the store was opened from its index ----

    def read_all(self) -> None:
        """Read the entries of a store opened from its index (nothing when they are read)."""
        if not self._unread:
            return
        self._unread = False
        with collector_paused():
            self._read_all()

    def _read_all(self) -> None:
        header, entries, good_end, lines, skipped = _parse(self.path, file_blocks(self._fd, self.path)[1])
        if good_end != self._size:  # written by something that ignores the lock: the file is what counts
            log.warning("%s changed on disk since it was opened (%d bytes, now %d)", self.path, self._size, good_end)
            self._size = good_end
        self.header, self._entries, self._lines, self.skipped = header, entries, lines, skipped
        self.messages.clear()
        for entry in entries:
            self._index(entry)
        if self.on_read is not None:
            self.on_read(self)

    @property
    def read(self) -> bool:
        """The entries are in memory (always, unless opened from the index and not yet asked for)."""
        return not self._unread

    @property
    def fd(self) -> int:
        return self._fd

    @property
    def size(self) -> int:
        """Bytes of complete lines in the file."""
        return self._size

    @property
    def entries(self) -> list[dict[str, Any]]:
        self.read_all()
        return self._entries

    @entries.setter
    def entries(self, value: list[dict[str, Any]]) -> None:
        self._entries = value

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        self.read_all()
        return self._by_id

    @by_id.setter
    def by_id(self, value: dict[str, dict[str, Any]]) -> None:
        self._by_id = value

    @property
    def leaf_id(self) -> str | None:
        self.read_all()
        return self._leaf_id

    @leaf_id.setter
    def leaf_id(self, value: str | None) -> None:
        self._leaf_id = value

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        """The entries of these types, in file order; those of :data:`INDEXED_SIDE_ENTRIES`
        without reading the file when the store was opened from its index."""
        if self._unread and set(types) <= set(INDEXED_SIDE_ENTRIES):
            return [e for e in self.facts.side if e.get("type") in types]
        return [e for e in self.entries if e.get("type") in types]

    # --- the tree ---------------------------------------------------------------------

    def _index(self, entry: dict[str, Any]) -> None:
        entry_id = entry.get("id")
        if isinstance(entry_id, str) and entry.get("type") not in SIDE_ENTRIES:
            self.by_id[entry_id] = entry
        self.leaf_id = self.leaf_after(entry, self.leaf_id)

    def leaf_after(self, entry: dict[str, Any], leaf: str | None) -> str | None:
        """The current position once ``entry`` is read, ``leaf`` before it: a tree entry becomes
        the leaf, a ``leaf`` entry moves it to a known entry (or the start), side entries leave it."""
        kind = entry.get("type")
        if kind == "leaf":
            target = entry.get("targetId")
            while target in self._moved:
                target = self._moved[target]
            return target if target is None or target in self.by_id else leaf
        entry_id = entry.get("id")
        return entry_id if isinstance(entry_id, str) and kind not in SIDE_ENTRIES else leaf

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
        if self.read_only is not None:
            raise SessionReadOnly(self.read_only)
        data = _dumps(entry)
        if self._size + len(data) > MAX_SESSION_BYTES:
            raise SessionWriteError(OSError(errno.EFBIG, f"the session file would pass its limit of "
                                            f"{MAX_SESSION_BYTES >> 20} MiB; continue in a new session"), self.path)
        try:
            _write_all(self._fd, data)
        except OSError as exc:
            self._cut_back()
            raise SessionWriteError(exc, self.path) from None
        self._size += len(data)
        self.entries.append(entry)
        self._index(entry)
        return entry

    def _cut_back(self) -> None:
        """Remove what a failed write left behind: the file ends with its last complete line."""
        try:
            os.ftruncate(self._fd, self._size)
        except OSError:
            pass  # then open() cuts the partial line off as a torn one

    def set_aside(self, bad: list[tuple[dict[str, Any], str]]) -> None:
        """Take entries that cannot be used out of the tree (the file keeps them); children move up."""
        gone = {id(entry): reason for entry, reason in bad}
        keep_entries, keep_lines = [], []
        for n, entry in enumerate(self.entries):
            line = self._lines[n] if n < len(self._lines) else None
            if id(entry) not in gone:
                keep_entries.append(entry)
                keep_lines.append(line)
                continue
            self.skipped.append({"line": line, "reason": gone[id(entry)]})
            entry_id = entry.get("id")
            if isinstance(entry_id, str) and self.by_id.get(entry_id) is entry:
                self._moved[entry_id] = entry.get("parentId")
        self.skipped.sort(key=lambda s: s["line"] or 0)
        self.entries, self._lines = keep_entries, keep_lines
        self.by_id, self.leaf_id = {}, None
        for n, entry in enumerate(self.entries):
            parent = entry.get("parentId")
            if parent in self._moved:
                while parent in self._moved:
                    parent = self._moved[parent]
                self.entries[n] = entry = {**entry, "parentId": parent}
            self._index(entry)

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
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise SessionWriteError(exc, self.path, "sync") from None

    def close(self) -> None:
        if self.before_close is not None and self._fd >= 0 and not self._closed:
            try:
                self.before_close(self)
            except Exception:  # noqa: BLE001 - the index is a cache: the file closes whatever happens to it
                log.warning("keeping the index of %s failed", self.path, exc_info=True)
        self._closed = True
        if self._fd >= 0:
            try:
                os.fsync(self._fd)
            except OSError:
                pass  # nothing more can be done for it; what is written stays
            finally:
                os.close(self._fd)  # closing releases the lock
                self._fd = -1

    @property
    def closed(self) -> bool:
        return self._closed


def _lock(fd: int, path: Path) -> None:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            raise SessionLocked(f"session file {path} is open in another process (another pi-daemon, e.g. a "
                                "second agent an editor started for the same session): close the session "
                                "there or stop that agent, then open it again") from None
        raise


def storage_error(exc: OSError, path: Path, what: str) -> Exception:
    """The session-level error for an OSError from changing ``path`` (read-only, or a failed write)."""
    if exc.errno in _READ_ONLY_ERRNOS:
        return SessionReadOnly(f"cannot {what} {path}: {exc.strerror}: the session folder is read-only; "
                               "stored sessions can still be listed, loaded and read")
    return SessionWriteError(exc, path, what)


def _cannot_open(exc: OSError, path: Path) -> SessionFileError:
    if isinstance(exc, FileNotFoundError):
        return SessionFileError(f"no session file at {path}")
    if exc.errno == errno.ELOOP:
        return SessionFileError(f"cannot open {path}: it is a symbolic link, and a session file is never followed")
    return SessionFileError(f"cannot open {path}: {exc.strerror}")


def _folder_error(exc: OSError, path: Path) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return SessionReadOnly(f"cannot create {path}: {path.parent} is not a folder (a symbolic link is never "
                               "written through: a repository could point it anywhere); sessions are not kept "
                               "until it is removed")
    return storage_error(exc, path, "create")


def _parse(path: Path, blocks: Iterator[bytes]) -> Parsed:
    try:
        return parse(path, blocks)
    except OSError as exc:  # reading a block failed
        raise _cannot_open(exc, path) from None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
