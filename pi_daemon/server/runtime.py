"""The runtime folder and a workspace's files in it.

The folder is ``$XDG_RUNTIME_DIR/pi-daemon/`` when ``XDG_RUNTIME_DIR`` is set, else
``${TMPDIR:-/tmp}/pi-daemon-<uid>/``. It is created 0700; one that exists is used only when it
is a real folder (not a symlink) owned by this user with no group or other permission: in a
shared ``/tmp`` anybody could have made it first, and whoever can write in it could put their
own socket where the editor looks for the daemon.

A workspace's files are named by a key (the first 16 hex digits of the sha256 of its real
path): ``<key>.sock``, ``<key>.lock``, ``<key>.json`` (the info :mod:`.ps` reads), ``<key>.log``.
Imported by ``attach``: the standard library only.
"""

from __future__ import annotations

import hashlib
import os
import stat

SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes on Linux, the last one the terminating NUL


class RuntimeFolderError(Exception):
    """The runtime folder, or a path in it, cannot be used (the message says why)."""


class Files:
    """A workspace's files: ``base`` (the folder and the key) with each one's suffix."""

    def __init__(self, workspace: str, base: str) -> None:
        self.workspace = workspace
        self.socket = base + ".sock"
        self.lock = base + ".lock"
        self.info = base + ".json"
        self.log = base + ".log"


def folder_path() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "pi-daemon")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"pi-daemon-{os.getuid()}")


def check_folder(path: str) -> None:
    """Raise RuntimeFolderError unless ``path`` (not followed) is a folder of this user's only."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise RuntimeFolderError(f"the runtime folder {path} cannot be read: {exc.strerror}") from None
    if stat.S_ISLNK(info.st_mode):
        raise RuntimeFolderError(f"the runtime folder {path} is a symlink; refusing to use it")
    if not stat.S_ISDIR(info.st_mode):
        raise RuntimeFolderError(f"the runtime folder {path} is not a folder; refusing to use it")
    if info.st_uid != os.getuid():
        raise RuntimeFolderError(f"the runtime folder {path} belongs to uid {info.st_uid}, not to you "
                                 f"(uid {os.getuid()}); refusing to use it")
    if info.st_mode & 0o077:
        raise RuntimeFolderError(f"the runtime folder {path} has mode {stat.S_IMODE(info.st_mode):04o}: "
                                 "others may reach it; refusing to use it (it must be 0700)")


def folder(create: bool = True) -> str:
    """The runtime folder, created when missing (``create``), checked either way."""
    path = folder_path()
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise RuntimeFolderError(f"the runtime folder {path} cannot be made: {exc.strerror}") from None
    check_folder(path)
    return path


def workspace_key(workspace: str) -> str:
    return hashlib.sha256(os.fsencode(os.path.realpath(workspace))).hexdigest()[:16]


def files(workspace: str, create: bool = True) -> Files:
    """The files of ``workspace``'s server; RuntimeFolderError when the folder cannot be used or
    the socket's path would be longer than a Unix socket's address can hold."""
    base = os.path.join(folder(create), workspace_key(workspace))
    found = Files(os.path.realpath(workspace), base)
    if len(os.fsencode(found.socket)) > SUN_PATH_MAX:
        raise RuntimeFolderError(f"the socket path {found.socket} is {len(os.fsencode(found.socket))} bytes, "
                                 f"more than a Unix socket's {SUN_PATH_MAX}; set XDG_RUNTIME_DIR (or TMPDIR) "
                                 "to a shorter folder")
    return found
