"""The files of :mod:`.blobs`, opened beneath the state folder (``.pi``) without following a symlink.

``.pi/blobs`` comes with the workspace: a cloned repository may hold ``.pi/blobs/packs`` as a
symlink to a folder elsewhere, or a blob as a symlink to a FIFO. Every folder below ``.pi``
is opened with ``O_NOFOLLOW`` and each file through its folder's descriptor, so nothing is
read or written outside ``.pi/blobs``; a file is read only when it is a regular one (a FIFO
or a device would block or never end), and only within its size. ``.pi`` itself is taken as
it is: the user may have linked it elsewhere.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Sequence

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
STALE_SECONDS = 30 * 60  # a pack being written is written to all along: this one is long dead
_TMP_PACK = re.compile(r"\.[0-9a-f]{16}\.tmp")


def open_folder(top: Path, parts: Sequence[str], make: bool = False) -> int:
    """A descriptor of the folder ``top/parts…`` (at least one part), no part of it a symlink
    (``make``: the missing ones are created, ``top`` too). OSError: not such a folder."""
    first = top / parts[0]
    if make:
        first.mkdir(parents=True, exist_ok=True)
    fd = os.open(first, _DIR | os.O_NOFOLLOW)  # ``top`` as it is; the part in it not a symlink
    try:
        for part in parts[1:]:
            if make:
                try:
                    os.mkdir(part, dir_fd=fd)
                except FileExistsError:
                    pass
            inner = os.open(part, _DIR | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(top: Path, parts: Sequence[str], offset: int = 0, size: int | None = None,
              limit: int | None = None) -> bytes:
    """``size`` bytes (all, for None) at ``offset`` of the regular file ``top/parts…``. OSError:
    there is none, it is shorter than that, or that is more than ``limit`` bytes."""
    folder = open_folder(top, parts[:-1])
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    finally:
        os.close(folder)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{parts[-1]} is not a regular file")
        if size is None:
            size = info.st_size - offset
        if offset + size > info.st_size:
            raise OSError(f"{parts[-1]} holds no {size} bytes at {offset}")
        if limit is not None and size > limit:
            raise OSError(f"{parts[-1]}: {size} bytes are more than the read may make")
        chunks = []
        while size > 0:
            chunk = os.pread(fd, min(size, 1 << 24), offset)
            if not chunk:
                raise OSError(f"{parts[-1]} holds no {size} bytes at {offset}")
            chunks.append(chunk)
            offset += len(chunk)
            size -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def create(folder: int, name: str) -> int:
    """A new file ``name`` in the folder ``folder``, for writing (never an existing one, nor a symlink)."""
    return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=folder)


def holds(folder: int, name: str, size: int) -> bool:
    """Whether ``name`` in ``folder`` is a regular file of ``size`` bytes (anything else in its
    place, a symlink say, is to be replaced)."""
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == size


def sweep(folder: int, older: float = STALE_SECONDS) -> int:
    """Remove the packs a killed daemon left half-written in ``folder`` (``.<id>.tmp`` not
    written to for ``older`` seconds: a newer one may be another daemon's scan, being
    written); how many. Only regular files of that name are removed."""
    removed = 0
    limit = time.time() - older
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        if _TMP_PACK.fullmatch(name):
            try:
                info = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and info.st_mtime < limit:
                    os.unlink(name, dir_fd=folder)
                    removed += 1
            except OSError:
                pass
    return removed
