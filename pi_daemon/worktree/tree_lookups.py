"""What a watched snapshot asks of a work tree: blob ids and sizes in its base, git's ignore
rules and the files of new folders (git isolated: :mod:`.git_isolated`), and a file's content
or stat data read beneath the root with no symlink followed."""

from __future__ import annotations

import itertools
import os
import stat

from ..guard.safe_open import open_beneath, open_root, read_under
from ..guard.tree_walk import Skipped, walk_levels
from .git_isolated import GitRunError
from .ignore_check import IgnoreCheck
from .snapshot import MAX_FILE_BYTES, UNKNOWN, GitSnapshot, objects
from .unread import MAX_DIFF_BYTES

Before = object  # bytes, None (absent, or not counted) or UNKNOWN


LARGE = ""  # the key of look_up's answer naming the blobs too large to diff


def look_up(base: GitSnapshot, tops: list[str], other: str | None = None) -> dict[str, dict[str, str | None]]:
    """For the base's tree (and ``other``, a commit or tree, when given): the blob id each name
    (relative to the top) has there, None where it is not a blob there; under :data:`LARGE`,
    the blobs over :data:`.unread.MAX_DIFF_BYTES`. One ``cat-file``."""
    trees = [base.base] + ([other] if other else [])
    found: dict[str, dict[str, str | None]] = {tree: {} for tree in [*trees, LARGE]}
    try:
        known = objects(base.git, [f"{tree}:{name}" for name in tops for tree in trees])
    except GitRunError:
        return found
    for name in tops:
        for tree in trees:
            oid, kind, size = known.get(f"{tree}:{name}", ("", "", 0))
            found[tree][name] = oid if kind == "blob" else None
            if kind == "blob" and size > MAX_DIFF_BYTES:
                found[LARGE][oid] = None
    return found


def ignored(base: GitSnapshot, root: str, names: list[str]) -> set[str]:
    """Which of ``names`` (relative to ``root``) git's ignore rules leave out."""
    if not names:
        return set()
    with IgnoreCheck(base.git, root) as ask:
        return ask(names)


def walk(base: GitSnapshot, root: str, trees: list[str], skipped: Skipped, most: int) -> list[str]:
    """The files below ``trees`` on the disk (:func:`pi_daemon.guard.tree_walk.walk_levels`: not
    through symlinks, not into another repository or a folder git ignores, bounded: what it left
    out is added to ``skipped``), at most ``most`` + 1 of them."""
    root_fd = open_root(root)
    try:
        with IgnoreCheck(base.git, root) as ignored:
            def keep(below: list[str]) -> list[str]:
                left = ignored(below)
                return [b for b in below if b not in left]

            return list(itertools.islice(walk_levels(root_fd, trees, keep, skipped=skipped), most + 1))
    finally:
        os.close(root_fd)


def read_kept(root_fd: int, name: str, budget: int) -> Before:
    """What ``name`` holds, as git would hash it, reached with no symlink followed on the way: a
    regular file's bytes (UNKNOWN past the size limit or the budget), a symlink's target; None
    when absent, neither, or behind a symlink (git sees the symlink, not what it leads to)."""
    parts = name.split("/")
    limit = min(MAX_FILE_BYTES, budget)
    parent = parent_of(root_fd, parts)
    if parent is None:
        return None
    try:
        st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            return os.fsencode(os.readlink(parts[-1], dir_fd=parent))
        if not stat.S_ISREG(st.st_mode):
            return None
        if st.st_size > limit:
            return UNKNOWN
        return read_under(parent, parts[-1:], limit)
    except FileNotFoundError:
        return None
    except OSError:  # changed while being read, or past the limit now
        return UNKNOWN
    finally:
        os.close(parent)


def daemons_own(name: str) -> bool:
    return name == ".pi" or name.startswith(".pi/")


def in_other_repositories(root: str, names: set[str]) -> set[str]:
    """The names inside a folder (below the root) that holds a ``.git``: another repository's
    files (a nested clone, a submodule), which the full read leaves out too."""
    other: dict[str, bool] = {}
    inside = set()
    for name in names:
        for folder in ancestors(name):
            if folder not in other:
                other[folder] = os.path.lexists(os.path.join(root, folder, ".git"))
            if other[folder]:
                inside.add(name)
                break
    return inside


def ancestors(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:k]) for k in range(1, len(parts))]


def stat_key(root_fd: int, name: str) -> tuple[int, ...] | None:
    """A file's stat data that any write or link moves, reached with no symlink followed (None:
    gone, or behind a symlink)."""
    parts = name.split("/")
    parent = parent_of(root_fd, parts)
    if parent is None:
        return None
    try:
        st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(parent)
    return (st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino)


def parent_of(root_fd: int, parts: list[str]) -> int | None:
    """The folder holding the name ``parts``, opened beneath the root with no symlink followed."""
    try:
        return open_beneath(root_fd, parts[:-1], os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


def present(path: str) -> bool:
    """Something other than a folder is there."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
