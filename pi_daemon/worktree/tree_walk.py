"""Walking a work tree a level at a time, with no symlink followed on the way.

Each folder is opened beneath the root (:func:`.safe_open.open_beneath`), so a folder swapped
for a symlink is never entered; a folder holding a ``.git`` is another repository (a
submodule, a nested clone) and is left out; ``keep`` chooses, for each level at once, which of
the folders found go on to the next (one question per level, e.g. to git's ignore rules).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

from ..guard.safe_open import open_beneath

GIT = ".git"


def walk_levels(root_fd: int, tops: list[str], keep: Callable[[list[str]], list[str]],
                visit: Callable[[str, int], bool] | None = None) -> Iterator[str]:
    """The files (names relative to the root, ``/``-separated) below the folders ``tops``.
    ``visit(folder, descriptor)`` is called for each folder before it is listed (a watch added
    then sees what is made in it meanwhile); it returning False ends the walk."""
    level = tops
    while level:
        below: list[str] = []
        for name in level:
            try:
                fd = open_beneath(root_fd, name.split("/") if name else [], os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue  # gone, not a folder, or a symlink on the way
            try:
                if name and _holds_git(fd):
                    continue
                if visit is not None and not visit(name, fd):
                    return
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.name == GIT:
                            continue
                        sub = f"{name}/{entry.name}" if name else entry.name
                        if entry.is_dir(follow_symlinks=False):
                            below.append(sub)
                        else:
                            yield sub
            except OSError:
                continue
            finally:
                os.close(fd)
        level = keep(below) if below else []


def _holds_git(fd: int) -> bool:
    try:
        os.stat(GIT, dir_fd=fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False

