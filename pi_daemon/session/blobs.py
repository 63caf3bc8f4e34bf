"""The file contents a session's change log refers to, under ``<workspace>/.pi/blobs``.

A content is named in three ways (the ``before``/``after`` of a ``turn_changes`` entry):

* ``<sha256>``: a file of its own, ``<first 2 hex>/<sha256>`` (what the tools' writes use,
  one at a time);
* ``<sha256>@<pack>:<offset>:<size>``: ``size`` bytes at ``offset`` of ``packs/<pack>``, a
  file written once per scan of what a command changed (one file for hundreds of contents
  costs a fraction of a file each); with ``+<name>`` after it, those bytes are a delta
  against the content ``<name>`` names (a file's content now against its before-content:
  a few changed lines stored, not the whole file again). A delta's content is kept as long
  as its base is;
* ``git:<blob id>``: a content the workspace's git repository already holds as a committed
  blob (a file's before-content, unchanged since its last commit) is not copied at all. If
  the history that held it is rewritten and the object collected (``git gc``), the content
  reads as not kept, as a missing blob does.

A content that does not hash to its name (SHA-256, or git's blob id) was changed behind the
daemon's back and is not trusted: it reads as not kept. A pack is complete under its name
before any name in it is handed out (written aside, then renamed), so a session file never
names a content that a crash cut short; what a killed daemon left written aside is removed
when a later one first writes a pack (:func:`.blob_files.sweep`).

The session files and ``.pi/blobs`` come with the workspace (a cloned repository may hold
them), so a name is read only when it has one of the forms above exactly, and only from a
regular file under ``.pi/blobs``, within its size (:mod:`.blob_files`: no symlink below
``.pi`` is followed, for reading or writing); a delta only copies its base's bytes in order,
so it never makes more than its base and its own bytes; and one read makes at most
:data:`MAX_READ_BYTES` in all.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from pathlib import Path
from typing import Any, BinaryIO, Iterable

from ..guard.state_folders import keep_out_of_git
from ..worktree.line_match import changed_regions
from ..worktree.snapshot import UNKNOWN, read_git_blobs
from .blob_files import create, holds, open_folder, read_file, sweep

UNKNOWN_BLOB = "?"  # a before-content that was not kept (outside git, a large file)
GIT_PREFIX = "git:"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PACKED = re.compile(r"([0-9a-f]{64})@([0-9a-f]{1,64}):([0-9]{1,18}):([0-9]{1,18})(?:\+([^+]+))?")
MAX_READ_BYTES = 1 << 30  # what one get_many may make in all: more than a review can show
_GIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_DELTA = b"pi-delta 1\n"  # then "c <offset> <size>\n" (copy from the base) or "i <size>\n<bytes>" (insert)


def delta(base: bytes, data: bytes) -> bytes | None:
    """``data`` as a delta against ``base`` (None: not worth it). Latin-1 gives one character
    per byte, so the regions' offsets are the bytes'."""
    regions = changed_regions(base.decode("latin-1"), data.decode("latin-1"))
    if regions is None:
        return None
    parts = [_DELTA]
    pa = pb = 0
    for ia, ja, ib, jb in regions + [(len(base), len(base), len(data), len(data))]:
        if ia > pa:
            parts.append(b"c %d %d\n" % (pa, ia - pa))
        if jb > ib:
            parts += [b"i %d\n" % (jb - ib), data[ib:jb]]
        pa, pb = ja, jb
    out = b"".join(parts)
    return out if len(out) < len(data) // 2 else None


def undelta(base: bytes, ops: bytes, limit: int | None = None) -> bytes:
    """The content ``ops`` (:func:`delta`'s) makes of ``base``. ValueError: not such a delta,
    or one making more than ``limit`` bytes. Copies go forward through the base and inserts
    stay within ``ops``, as :func:`delta` writes them, so the result is never longer than both
    together (a crafted delta cannot inflate)."""
    if not ops.startswith(_DELTA):
        raise ValueError("not a delta")
    out = []
    made = 0
    at = len(_DELTA)
    copied = 0  # the base's bytes before this are behind every copy so far
    while at < len(ops):
        end = ops.index(b"\n", at)
        kind, *nums = ops[at:end].split(b" ")
        at = end + 1
        if not all(n.isdigit() and len(n) <= 18 for n in nums):
            raise ValueError("not a delta")
        if kind == b"c" and len(nums) == 2:
            start, size = int(nums[0]), int(nums[1])
            if start < copied or start + size > len(base):
                raise ValueError("not a delta")
            out.append(base[start:start + size])
            copied = start + size
        elif kind == b"i" and len(nums) == 1:
            size = int(nums[0])
            if at + size > len(ops):
                raise ValueError("not a delta")
            out.append(ops[at:at + size])
            at += size
        else:
            raise ValueError("not a delta")
        made += len(out[-1])
        if limit is not None and made > limit:
            raise ValueError("more than the read may make")
    return b"".join(out)


def _undoes(base: bytes, ops: bytes, data: bytes) -> bool:
    try:
        return undelta(base, ops) == data
    except ValueError:
        return False


def git_blob_id(data: bytes, like: str) -> str:
    """``data``'s git blob id, with the hash of the repository that named ``like``."""
    digest = hashlib.sha1() if len(like) == 40 else hashlib.sha256()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


class Pack:
    """Contents written into one new pack file; :meth:`close` puts it in place, and only then
    are the names :meth:`add` gave valid."""

    def __init__(self, top: Path, parts: tuple[str, ...], sweep_first: bool = False) -> None:
        self.top = top
        self.parts = parts  # the packs folder, below ``top``
        self.id = uuid.uuid4().hex[:16]
        self._folder: int | None = None
        self._file: BinaryIO | None = None
        self._tmp = f".{self.id}.tmp"
        self._offset = 0
        self._names: dict[str, str] = {}
        self._sweep = sweep_first

    def add(self, data: bytes, base: tuple[bytes, str] | None = None) -> str:
        """Store ``data`` (as a delta against ``base``'s content, named as given, when that is
        much smaller); its name."""
        digest = hashlib.sha256(data).hexdigest()
        key = digest if base is None else f"{digest}+{base[1]}"
        name = self._names.get(key)
        if name is None:
            stored, suffix = data, ""
            if base is not None and "+" not in base[1]:
                ops = delta(base[0], data)
                if ops is not None and _undoes(base[0], ops, data):  # never expected to differ; cheap to check
                    stored, suffix = ops, f"+{base[1]}"
            if self._file is None:
                self._open()
            assert self._file is not None
            self._file.write(stored)
            name = f"{digest}@{self.id}:{self._offset}:{len(stored)}{suffix}"
            self._names[key] = name
            self._offset += len(stored)
        return name

    def _open(self) -> None:
        self._folder = open_folder(self.top, self.parts, make=True)
        if self._sweep:
            sweep(self._folder)
        self._file = os.fdopen(create(self._folder, self._tmp), "wb")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            os.replace(self._tmp, self.id, src_dir_fd=self._folder, dst_dir_fd=self._folder)
        self._close_folder()

    def discard(self) -> None:
        if self._file is not None:
            self._file.close()
            try:
                os.unlink(self._tmp, dir_fd=self._folder)
            except OSError:
                pass
        self._close_folder()

    def _close_folder(self) -> None:
        if self._folder is not None:
            os.close(self._folder)
            self._folder = None


class Blobs:
    """The contents under ``folder`` (``.pi/blobs``), and those git holds in ``git_root``."""

    def __init__(self, folder: Path, git_root: str | None = None) -> None:
        self.folder = folder
        self.git_root = git_root
        self._made: set[str] = set()  # subfolders known to exist (a mkdir per blob is not free)
        self._swept = False
        self._ignored = False  # the folder has its .gitignore

    def _keep_out_of_git(self) -> None:
        if self._ignored:
            return
        try:
            folder = open_folder(self.folder.parent, (self.folder.name,), make=True)
        except OSError:
            return  # the write that follows meets the same error, and says it where it is handled
        try:
            keep_out_of_git(folder)
        finally:
            os.close(folder)
        self._ignored = True

    def put(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        parts = (self.folder.name, digest[:2])
        self._keep_out_of_git()
        try:
            folder = open_folder(self.folder.parent, parts, make=digest[:2] not in self._made)
        except FileNotFoundError:  # removed since
            folder = open_folder(self.folder.parent, parts, make=True)
        try:
            self._made.add(digest[:2])
            if not holds(folder, digest, len(data)):
                tmp = f".{digest}.{uuid.uuid4().hex[:8]}"
                with os.fdopen(create(folder, tmp), "wb") as file:
                    file.write(data)
                os.replace(tmp, digest, src_dir_fd=folder, dst_dir_fd=folder)
        finally:
            os.close(folder)
        return digest

    def pack(self) -> Pack:
        """A new pack; the first one a store writes removes what killed daemons left half-written."""
        sweep_first, self._swept = not self._swept, True
        self._keep_out_of_git()
        return Pack(self.folder.parent, (self.folder.name, "packs"), sweep_first)

    def get(self, name: str | None) -> Any:
        return self.get_many([name])[0]

    def get_many(self, names: Iterable[str | None]) -> list[Any]:
        """Each name's content (bytes), None for None, :data:`UNKNOWN` when not kept; the git
        blobs among them read by one ``git cat-file --batch``. Each name is read once, and all
        of them make at most :data:`MAX_READ_BYTES` (a session file naming one large content
        under a thousand names would otherwise keep the daemon hashing for hours); past that
        a name reads as not kept."""
        names = list(names)
        strings = [n for n in names if isinstance(n, str)]
        bases = [m.group(5) for n in strings for m in [_PACKED.fullmatch(n)] if m and m.group(5)]
        wanted = list(dict.fromkeys(n[len(GIT_PREFIX):] for n in strings + bases if n.startswith(GIT_PREFIX)
                                    and _GIT_ID.fullmatch(n[len(GIT_PREFIX):])))  # each blob once
        reading = _Reading(read_git_blobs(self.git_root, wanted) if wanted and self.git_root else {})
        out: list[Any] = []
        for name in names:
            if name is None:
                out.append(None)
            elif not isinstance(name, str):  # a session file's damage
                out.append(UNKNOWN)
            else:
                out.append(self._read(name, reading))
        return out

    def _read(self, name: str, reading: _Reading, delta: bool = True) -> Any:
        if name not in reading.done:
            try:
                reading.done[name] = self._read_new(name, reading, delta)
            except (OSError, ValueError):
                reading.done[name] = UNKNOWN
        return reading.done[name]

    def _read_new(self, name: str, reading: _Reading, delta: bool) -> Any:
        if name.startswith(GIT_PREFIX):
            oid = name[len(GIT_PREFIX):]
            data = reading.from_git.get(oid)
            if data is None:
                return UNKNOWN
            reading.take(len(data))
            return data if git_blob_id(data, oid) == oid else UNKNOWN
        packed = _PACKED.fullmatch(name)
        if packed is not None:
            digest, pack, offset, size, base = packed.groups()
            if base is not None and not delta:
                return UNKNOWN  # a delta's base is never a delta itself
            reading.take(int(size))
            data = read_file(self.folder.parent, (self.folder.name, "packs", pack), int(offset), int(size))
            if base is not None:
                base_data = self._read(base, reading, delta=False)
                if base_data is UNKNOWN:
                    return UNKNOWN
                data = undelta(base_data, data, reading.left)
                reading.take(len(data))
        elif _SHA256.fullmatch(name):
            digest = name
            data = read_file(self.folder.parent, (self.folder.name, digest[:2], digest), limit=reading.left)
            reading.take(len(data))
        else:
            return UNKNOWN  # "?" (not kept), or not a name the store gives
        return data if hashlib.sha256(data).hexdigest() == digest else UNKNOWN


class _Reading:
    """One :meth:`Blobs.get_many`: git's blobs, the names read, and the bytes it may still make."""

    def __init__(self, from_git: dict[str, bytes]) -> None:
        self.from_git = from_git
        self.done: dict[str, Any] = {}
        self.left = MAX_READ_BYTES

    def take(self, size: int) -> None:
        if size > self.left:
            raise ValueError("past the read's budget")
        self.left -= size
