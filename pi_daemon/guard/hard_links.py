"""Whether every name of a hard-linked file is beneath one folder: then the link leads nowhere else.

A file with more than one link may be a file outside the workspace given a name inside it,
so the door refuses such a file unless each of its names is found beneath the root: the
root is walked (no symlink followed, a folder at a time, without recursion) comparing each
entry's inode number, until as many names as the file has links are found. The walk is
bounded (:data:`MAX_ENTRIES` entries, :data:`MAX_DEPTH` levels): what it could not look at
may hold a name, so past a bound the answer is no. A link made or removed while it walks
changes the file's ctime, which is compared before and after: then the answer is no too.
"""

from __future__ import annotations

import os
import stat

from .safe_open import open_beneath, open_root

MAX_ENTRIES = 200_000  # names looked at, about 0.1 s
MAX_DEPTH = 64


def all_names_within(root: str | os.PathLike[str], fd: int) -> bool:
    """Whether every link of the open regular file ``fd`` is a name beneath ``root`` now."""
    before = os.fstat(fd)
    if before.st_nlink <= 1:
        return True
    if not stat.S_ISREG(before.st_mode):
        return False
    found = _count_names(root, before)
    after = os.fstat(fd)
    return found >= before.st_nlink and (after.st_nlink, after.st_ctime_ns) == (before.st_nlink, before.st_ctime_ns)


def _count_names(root: str | os.PathLike[str], st: os.stat_result) -> int:
    """How many names beneath ``root`` lead to the file ``st`` (stopping once all are found or at a bound)."""
    root_fd = open_root(root)
    found = 0
    looked = 0
    level: list[list[str]] = [[]]
    try:
        for _ in range(MAX_DEPTH):
            below: list[list[str]] = []
            for parts in level:
                try:
                    fd = open_beneath(root_fd, parts, os.O_RDONLY | os.O_DIRECTORY)
                except OSError:
                    continue  # gone, or a symlink on the way: not a name of this folder's tree
                try:
                    with os.scandir(fd) as entries:
                        for entry in entries:
                            looked += 1
                            if looked > MAX_ENTRIES:
                                return found
                            if entry.is_dir(follow_symlinks=False):
                                below.append([*parts, entry.name])
                            elif entry.inode() == st.st_ino and _same(entry, st):
                                found += 1
                                if found >= st.st_nlink:
                                    return found
                except OSError:
                    continue
                finally:
                    os.close(fd)
            if not below:
                return found
            level = below
        return found
    finally:
        os.close(root_fd)


def _same(entry: os.DirEntry[str], st: os.stat_result) -> bool:
    try:
        got = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (got.st_dev, got.st_ino) == (st.st_dev, st.st_ino)
