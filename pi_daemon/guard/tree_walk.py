"""Walking a work tree a level at a time, with no symlink followed on the way, and bounded.

Each folder is opened beneath the root (:func:`.safe_open.open_beneath`), so a folder swapped
for a symlink is never entered; a folder holding a ``.git`` is another repository (a
submodule, a nested clone) and is left out (unless ``into_repositories``); ``keep`` chooses,
for each level at once, which of the folders found go on to the next (one question per
level, e.g. to git's ignore rules).

A walk is a loop, never a recursion, and it is bounded: a folder more than :data:`MAX_DEPTH`
folders below the root is not entered, and after :data:`MAX_FOLDERS` folders the walk stops.
What it left out is noted in a :class:`Skipped` (the folders, each with why), which the
change record shows the user (``turn_diff``'s ``skipped``, a note on the ``bash`` result):
a change inside such a folder is not recorded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from .safe_open import open_beneath, open_root

GIT = ".git"
MAX_DEPTH = 128  # folders below the root; real trees stay far above it, a crafted chain can go to thousands
MAX_FOLDERS = 50_000  # folders one walk enters
MAX_LISTED = 20  # skipped folders named; past that only counted
TOO_DEEP = f"deeper than {MAX_DEPTH} folders below the workspace: not looked into, changes inside are not recorded"


class Skipped:
    """The folders walks left out (relative names), each with why; the first :data:`MAX_LISTED`
    named, the rest counted in :attr:`more`."""

    def __init__(self) -> None:
        self.folders: dict[str, str] = {}
        self.more = 0

    def add(self, folder: str, why: str) -> None:
        if folder in self.folders:
            return
        if len(self.folders) < MAX_LISTED:
            self.folders[folder] = why
        else:
            self.more += 1

    def update(self, other: Skipped) -> None:
        for folder, why in other.folders.items():
            self.add(folder, why)
        self.more += other.more

    def listed(self) -> list[tuple[str, str]]:
        """The folders and why, with one last entry ``("…", "N more folders")`` for the unnamed."""
        out = sorted(self.folders.items())
        if self.more:
            out.append(("…", f"{self.more} more folders left out the same way"))
        return out

    def __bool__(self) -> bool:
        return bool(self.folders or self.more)


def depth(name: str) -> int:
    """How many folders below the root ``name`` (a relative folder name) is: ``a/b`` is 2."""
    return name.count("/") + 1 if name else 0


def walk_entries(root_fd: int, tops: list[str], keep: Callable[[list[str]], list[str]],
                 visit: Callable[[str, int], bool] | None = None, *, skipped: Skipped | None = None,
                 max_folders: int = MAX_FOLDERS, into_repositories: bool = False,
                 ) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """The files (names relative to the root, ``/``-separated, each with its directory entry,
    whose ``stat`` is valid until the next one is asked for) below the folders ``tops``.
    ``visit(folder, descriptor)`` is called for each folder before it is listed (a watch added
    then sees what is made in it meanwhile); it returning False ends the walk. Folders left
    out by the bounds are added to ``skipped``."""
    level = tops
    entered = 0
    while level:
        below: list[str] = []
        for at, name in enumerate(level):
            if depth(name) > MAX_DEPTH:
                if skipped is not None:
                    skipped.add(name, TOO_DEEP)
                continue
            if entered >= max_folders:
                if skipped is not None:
                    for left in [*level[at:], *below]:
                        skipped.add(left, _past(max_folders))
                return
            entered += 1
            try:
                fd = open_beneath(root_fd, name.split("/") if name else [], os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue  # gone, not a folder, or a symlink on the way
            try:
                if name and not into_repositories and _holds_git(fd):
                    continue
                if visit is not None and not visit(name, fd):
                    return
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.name == GIT:
                            continue
                        sub = f"{name}/{entry.name}" if name else entry.name
                        if entry.is_dir(follow_symlinks=False):
                            if entered + len(below) <= max_folders:  # one more than can be entered: the bound above
                                below.append(sub)
                            elif skipped is not None:  # a level as wide as a million folders is not held
                                skipped.add(sub, _past(max_folders))
                        else:
                            yield sub, entry
            except OSError:
                continue
            finally:
                os.close(fd)
        level = keep(below) if below else []


def walk_levels(root_fd: int, tops: list[str], keep: Callable[[list[str]], list[str]],
                visit: Callable[[str, int], bool] | None = None, *, skipped: Skipped | None = None,
                max_folders: int = MAX_FOLDERS) -> Iterator[str]:
    """The names :func:`walk_entries` gives (other repositories left out)."""
    for name, _ in walk_entries(root_fd, tops, keep, visit, skipped=skipped, max_folders=max_folders):
        yield name


def stat_walk(root: str, skip_names: set[str], max_files: int,
              skipped: Skipped) -> Iterator[tuple[str, os.stat_result]]:
    """Each file below ``root`` (other repositories' too; not in a folder named one of
    ``skip_names``) with its ``lstat``, at most ``max_files``: past that the walk stops, and the
    folder it stopped in is noted in ``skipped``."""
    def keep(below: list[str]) -> list[str]:
        return [b for b in below if b.rpartition("/")[2] not in skip_names]

    try:
        root_fd = open_root(root)
    except OSError:
        return
    try:
        count = 0
        for name, entry in walk_entries(root_fd, [""], keep, skipped=skipped, into_repositories=True):
            if count >= max_files:
                skipped.add(name.rpartition("/")[0] or ".", f"past {max_files} files: the walk stopped here, "
                                                            "changes here and in folders not yet walked are not recorded")
                return
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            count += 1
            yield name, st
    finally:
        os.close(root_fd)


def _past(max_folders: int) -> str:
    return f"past {max_folders} folders: the walk stopped, changes inside are not recorded"


def _holds_git(fd: int) -> bool:
    try:
        os.stat(GIT, dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False
