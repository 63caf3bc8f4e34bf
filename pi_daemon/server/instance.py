"""One server per workspace: the lock it holds for its life, and the info file ``ps`` reads.

The lock is an ``flock`` on ``<key>.lock``. Whoever holds it may remove the workspace's files
(a server on its way out, or a stale server's socket and info cleaned by the next one or by
``ps``); a lock taken is checked to be on the file the path still names, since the file may
have been removed between its opening and its locking.
"""

from __future__ import annotations

import fcntl
import json
import os
import time

from .runtime import Files

TYPE_CHECKING = False  # not typing's: attach reads the info file (see ..cli)
if TYPE_CHECKING:
    from typing import Any

MAX_INFO_BYTES = 64 << 10
CLAIM_WAIT_S = 0.5  # another process may hold the lock for a moment while it cleans up


def _open_lock(path: str, create: bool) -> int:
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_CREAT if create else 0)
    return os.open(path, flags, 0o600)


def _same_file(fd: int, path: str) -> bool:
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def claim(lock: str, wait: float = CLAIM_WAIT_S, create: bool = True) -> int | None:
    """The lock's descriptor, held; None when another process holds it (after ``wait`` seconds)
    or, without ``create``, when there is no lock file."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fd = _open_lock(lock, create)
        except FileNotFoundError:
            if not create:
                return None
            continue  # removed between the creation and the opening: again
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)
            continue
        if _same_file(fd, lock):
            return fd
        os.close(fd)
        if not create:
            return None


def remove(files: Files) -> None:
    """Remove the socket, the info and the lock (the caller holds the lock). What cannot be
    removed (gone already, or not a file: a folder at the socket's path) is left."""
    for path in (files.socket, files.info, files.lock):
        try:
            os.unlink(path)
        except OSError:
            pass


def write_info(path: str, info: dict[str, Any]) -> None:
    """Replace the info file at once (a reader sees the old one or the new one), 0600."""
    temporary = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(info, file)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise


def read_info(path: str) -> dict[str, Any] | None:
    """The info file as written by :func:`write_info`; None when there is none or it is unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_INFO_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_INFO_BYTES:
        return None
    try:
        info = json.loads(data)
    except ValueError:
        return None
    return info if isinstance(info, dict) else None
