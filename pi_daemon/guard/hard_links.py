"""Whether every name of a hard-linked file is beneath one folder: then the link leads nowhere else.

A file with more than one link may be a file outside the workspace given a name inside it,
so the door refuses such a file unless each of its names is found beneath the root: the
root is walked (:func:`.tree_walk.walk_entries`: no symlink followed, a folder at a time,
bounded in depth and folders) comparing each entry's inode number, until as many names as
the file has links are found, at most :data:`MAX_ENTRIES` of them: what it could not look at
may hold a name, so past a bound the answer is no. A name in a ``.git`` or in the daemon's
``.pi`` is no name of the workspace's: a link to ``.git/config`` is refused as one outside. A link made or removed while it walks
changes the file's ctime, which is compared before and after: then the answer is no too.
"""

from __future__ import annotations

import os
import stat

from .safe_open import open_root
from .tree_walk import walk_entries

MAX_ENTRIES = 200_000  # names looked at, about 0.1 s
STATE = ".pi"  # the daemon's own folder at the root


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
    """How many names beneath ``root`` lead to the file ``st`` (stopping once all are found or at a
    bound). Names in a ``.git`` (git's own files) or in the daemon's ``.pi`` are not counted:
    a link there is a way to reach them by another name."""
    root_fd = open_root(root)
    found = looked = 0
    try:
        for _, entry in walk_entries(root_fd, [""], lambda below: [b for b in below if b != STATE],
                                     into_repositories=True):
            looked += 1
            if looked > MAX_ENTRIES:
                break
            if entry.inode() == st.st_ino and _same(entry, st):
                found += 1
                if found >= st.st_nlink:
                    break
    finally:
        os.close(root_fd)
    return found


def _same(entry: os.DirEntry[str], st: os.stat_result) -> bool:
    try:
        got = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return (got.st_dev, got.st_ino) == (st.st_dev, st.st_ino)
