"""Opening a path beneath a directory without following a symbolic link on the way.

A name checked first and opened later can change in between: a folder swapped for a
symlink sends the open elsewhere. Here every open starts from a file descriptor of the
confinement root and refuses any symlink it meets, so what is opened is what was checked.

Linux's ``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS``
does this in one call; elsewhere (or on kernels without it) the path is walked one
component at a time with ``openat(O_NOFOLLOW)``. A symlink met on the way is an
``OSError`` with ``errno.ELOOP`` (or ``ENOTDIR``), never a silent detour.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from typing import Callable, Sequence

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | O_CLOEXEC | getattr(os, "O_PATH", 0)
"""How a folder on the way is opened: only to look up the next name in it."""

_SYS_OPENAT2 = 437  # the same number on every Linux architecture (added in 5.6)
_RESOLVE = 0x02 | 0x04 | 0x08  # RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        syscall = libc.syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
    return syscall


_syscall = _load_openat2()


def _openat2(dir_fd: int, path: bytes, flags: int, mode: int) -> int:
    assert _syscall is not None  # reached only where HAVE_OPENAT2 (or its probe) found it
    how = _OpenHow(flags, mode if flags & os.O_CREAT else 0, _RESOLVE)
    fd = _syscall(_SYS_OPENAT2, dir_fd, path, ctypes.addressof(how), ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), os.fsdecode(path))
    return fd


def _probe() -> bool:
    """Whether openat2 works here (old kernels say ENOSYS, some sandboxes EPERM)."""
    if _syscall is None:
        return False
    try:
        root = os.open("/", O_DIR)
    except OSError:
        return False
    try:
        os.close(_openat2(root, b".", O_DIR, 0))
        return True
    except OSError:
        return False
    finally:
        os.close(root)


HAVE_OPENAT2 = _probe()


def open_root(root: str | os.PathLike[str]) -> int:
    """A descriptor of a confinement root (the root itself is the user's choice: followed)."""
    return os.open(root, os.O_RDONLY | os.O_DIRECTORY | O_CLOEXEC)


def _open_folder(name: str, dir_fd: int) -> int:
    try:
        return os.open(name, O_DIR, dir_fd=dir_fd)
    except NotADirectoryError:
        # O_DIRECTORY|O_NOFOLLOW on a symlink says ENOTDIR; name it as the symlink it is
        if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), name) from None
        raise


def _walk(root_fd: int, parts: Sequence[str], make: bool) -> int:
    """A descriptor of ``root/parts...`` reached one folder at a time, creating missing ones if ``make``."""
    fd = os.dup(root_fd)
    try:
        for name in parts:
            try:
                nxt = _open_folder(name, fd)
            except FileNotFoundError:
                if not make:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                nxt = _open_folder(name, fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_beneath(root_fd: int, parts: Sequence[str], flags: int, mode: int = 0o666, *,
                 make_parents: bool = False, use_openat2: bool | None = None) -> int:
    """Open ``root/parts...`` with ``flags`` (``O_NOFOLLOW`` and ``O_CLOEXEC`` are added).

    No component may be a symlink, ``..`` or empty; ``make_parents`` creates missing
    folders on the way (each created relative to its checked parent).
    """
    if any(p in ("", ".", "..") or "/" in p for p in parts):
        raise OSError(errno.EINVAL, "not a plain path component", "/".join(parts))
    flags |= os.O_NOFOLLOW | O_CLOEXEC
    if not parts:
        return os.open(".", flags, mode, dir_fd=root_fd)
    if HAVE_OPENAT2 if use_openat2 is None else use_openat2:
        try:
            return _openat2(root_fd, os.fsencode("/".join(parts)), flags, mode)
        except FileNotFoundError:
            if not make_parents:
                raise
    parent = _walk(root_fd, parts[:-1], make_parents)
    try:
        return os.open(parts[-1], flags, mode, dir_fd=parent)
    finally:
        os.close(parent)


# --- whole files read for the daemon itself (settings, skills, templates, instructions) ------------


def read_regular(path: str | os.PathLike[str], limit: int, *, follow: bool = False) -> bytes:
    """The bytes of ``path`` (not followed if it is a symlink, unless ``follow``) if it is a regular
    file of at most ``limit`` bytes. OSError saying why not (a FIFO or a device would block or
    never end, ``/dev/zero`` would never end either)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    return _read_open(os.open(path, flags), path, limit)


def read_beneath(root: str | os.PathLike[str], path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file ``path`` beneath ``root``, read as the file tools read: the
    path resolved (a symlink that stays beneath the root works), then opened from the root with
    no symlink followed on the way, so a name swapped for a symlink after the check is refused.
    At most ``limit`` bytes. OSError saying why not."""
    base = os.path.realpath(root)
    target = os.path.realpath(path)
    below = os.path.relpath(target, base)
    if below == os.pardir or below.startswith(os.pardir + os.sep) or os.path.isabs(below):
        raise OSError(errno.EACCES, f"it resolves to {target}, outside {base}", os.fspath(path))
    root_fd = open_root(base)
    try:
        parts = [] if below == os.curdir else below.split(os.sep)
        fd = open_beneath(root_fd, parts, os.O_RDONLY | os.O_NONBLOCK)
    finally:
        os.close(root_fd)
    return _read_open(fd, path, limit)


def read_under(root_fd: int, parts: Sequence[str], limit: int) -> bytes:
    """The bytes of the regular file ``root/parts...``, reached with no symlink followed (the last
    name's included). At most ``limit`` bytes. OSError saying why not."""
    return _read_open(open_beneath(root_fd, parts, os.O_RDONLY | os.O_NONBLOCK), "/".join(parts), limit)


def _read_open(fd: int, path: str | os.PathLike[str], limit: int) -> bytes:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
        chunks = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", os.fspath(path))
        return data
    finally:
        os.close(fd)
