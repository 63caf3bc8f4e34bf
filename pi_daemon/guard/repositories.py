"""Where a workspace's repositories are, read as data, and which of their paths git itself obeys.

A ``.git`` found above a folder is read without git: its ``HEAD``, refs and ``commondir`` are
opened as bounded regular files with no symlink followed, and a ``.git`` file is followed only
to this work tree's own folder (a linked work tree or a submodule). What the user's own git
obeys (``.git``, ``.gitattributes``) is what the sandbox keeps read-only and the file tools
refuse to write: a command or a tool that rewrote it would run its programs the next time the
user runs git (or any editor does), outside every sandbox.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import attrs

from .safe_open import read_regular

MAX_PACKED_REFS_BYTES = 64 << 20
MAX_SMALL_BYTES = 64 << 10  # HEAD, a ref, a ``.git`` file, ``commondir``, ``info/exclude``
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(rb"refs/[A-Za-z0-9._/-]{1,1000}")
GIT_FOLDER = ".git"
ATTRIBUTES_FILE = ".gitattributes"


def read_data(path: str, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO or device) of at most
    ``limit`` bytes; else None."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None


@attrs.frozen
class Repo:
    """Where a work tree's repository keeps what the daemon reads of it."""

    top: str  # the work tree's top folder
    git_dir: str  # HEAD and the index (a linked work tree has its own)
    common_dir: str  # objects, refs, info/exclude

    @property
    def objects(self) -> str:
        return os.path.join(self.common_dir, "objects")

    def head(self) -> str | None:
        """The commit ``HEAD`` names (None: none yet, or it cannot be read as plain data)."""
        data = read_data(os.path.join(self.git_dir, "HEAD"), MAX_SMALL_BYTES)
        for _ in range(5):  # a symbolic ref may name another one
            if data is None:
                return None
            data = data.strip()
            if _OID.fullmatch(data):
                return data.decode()
            if not data.startswith(b"ref: ") or not _REF.fullmatch(data[5:]) or b".." in data:
                return None
            data = self._ref(data[5:])
        return None

    def _ref(self, name: bytes) -> bytes | None:
        found = read_data(os.path.join(self.common_dir, os.fsdecode(name)), MAX_SMALL_BYTES)
        if found is not None:
            return found
        packed = read_data(os.path.join(self.common_dir, "packed-refs"), MAX_PACKED_REFS_BYTES)
        for line in (packed or b"").splitlines():
            oid, _, ref = line.partition(b" ")
            if ref == name and _OID.fullmatch(oid):
                return oid
        return None


def find_repo(root: str) -> Repo | None:
    """The repository whose work tree holds ``root`` (None: none, or one git would have to be
    trusted to read: a ``.git`` that is a symlink, or names its folder oddly)."""
    folder = os.path.realpath(root)
    if not os.path.isdir(folder):
        return None
    while True:
        dot_git = os.path.join(folder, ".git")
        try:
            info = os.lstat(dot_git)
        except OSError:
            info = None
        if info is not None:
            if stat.S_ISDIR(info.st_mode):
                git_dir: str | None = dot_git
            elif stat.S_ISREG(info.st_mode):
                git_dir = _pointed(dot_git, folder)
            else:
                return None
            if git_dir is None or not os.path.isdir(git_dir):
                return None
            common = read_data(os.path.join(git_dir, "commondir"), MAX_SMALL_BYTES)
            common_dir = git_dir
            if common is not None:  # a linked work tree's folder lies inside its repository's
                named = os.fsdecode(common.strip())
                common_dir = os.path.realpath(os.path.join(git_dir, named))
                if not named or "\n" in named or not os.path.realpath(git_dir).startswith(common_dir + os.sep):
                    return None
            if not os.path.isdir(os.path.join(common_dir, "objects")) or "\n" in common_dir:
                return None
            return Repo(folder, git_dir, common_dir)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _pointed(dot_git: str, folder: str) -> str | None:
    """The folder a ``.git`` file (``gitdir: <path>``) names, if it is this work tree's: a linked
    work tree's (its ``gitdir`` file names this ``.git`` back) or a submodule's (inside the
    ``.git`` folder of a folder above). A ``.git`` file naming another repository on the disk
    would hand the snapshot that repository's index and objects."""
    data = read_data(dot_git, MAX_SMALL_BYTES)
    if data is None or not data.startswith(b"gitdir: "):
        return None
    named = os.fsdecode(data[len(b"gitdir: "):].strip())
    if not named or "\n" in named:
        return None
    git_dir = os.path.realpath(os.path.join(folder, named))
    back = read_data(os.path.join(git_dir, "gitdir"), MAX_SMALL_BYTES)
    if back is not None and os.path.realpath(os.fsdecode(back.strip())) == os.path.realpath(dot_git):
        return git_dir
    above = os.path.dirname(folder)
    while above != os.path.dirname(above):
        if git_dir.startswith(os.path.join(above, GIT_FOLDER) + os.sep):
            return git_dir
        above = os.path.dirname(above)
    return None


def in_git_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names something inside (or is) a ``.git`` folder or file."""
    return GIT_FOLDER in Path(path).parts


def _dir_or_file(path: str) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


def guarded_paths(roots: list[Path]) -> list[str]:
    """What the sandbox keeps read-only inside the writable ``roots``: the ``.git`` of the
    repository holding each root and of each repository directly below it (a folder of
    clones), and the ``.gitattributes`` at their tops. Only what exists is listed."""
    found: list[str] = []
    tops: list[str] = []
    for root in roots:
        repo = find_repo(str(root))
        if repo is not None:
            tops.append(repo.top)
            if repo.common_dir != os.path.join(repo.top, GIT_FOLDER):  # a linked work tree's main repository
                found.append(repo.common_dir)
        try:
            with os.scandir(root) as entries:
                tops += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)
                         and os.path.lexists(os.path.join(entry.path, GIT_FOLDER))]
        except OSError:
            pass
    for top in dict.fromkeys(tops):
        found += [os.path.join(top, name) for name in (GIT_FOLDER, ATTRIBUTES_FILE)
                  if _dir_or_file(os.path.join(top, name))]
    inside = [str(root) for root in roots]
    return [p for p in dict.fromkeys(found)
            if any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in inside)]
