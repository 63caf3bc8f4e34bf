"""Files the change record does not read: too large to diff, or not readable as the tools read.

A file over :data:`MAX_DIFF_BYTES` is recorded by its size and modification time only: the
daemon never reads it whole, and the isolated git never hashes it (:func:`large_files`
lists the work tree's, which the snapshot then leaves out of ``git add``). A changed file
the record cannot read (too large, a hard link whose names are not all inside the
workspace, not a regular file, not readable) is still listed, as an :class:`Unread` saying
why, so a review and a rewind can tell the user it is not restorable.
"""

from __future__ import annotations

import os
import stat

import attrs

from .git_isolated import IsolatedGit

MAX_DIFF_BYTES = 16 << 20  # over this a file is "too large to diff"


@attrs.frozen
class Unread:
    """A file's content the record did not read: why, and its size and modification time then."""

    reason: str
    size: int | None = None
    mtime_ns: int | None = None


def too_large(path: str, st: os.stat_result) -> Unread | None:
    """An :class:`Unread` for a regular file over the limit, None for any other."""
    if not stat.S_ISREG(st.st_mode) or st.st_size <= MAX_DIFF_BYTES:
        return None
    return Unread(f"too large to diff ({_size(st.st_size)}; the limit is {_size(MAX_DIFF_BYTES)})",
                  st.st_size, st.st_mtime_ns)


def unread(path: str, reason: str) -> Unread:
    """``reason``, with the file's size and time when it can be looked at."""
    try:
        st = os.lstat(path)
    except OSError:
        return Unread(reason)
    return Unread(reason, st.st_size, st.st_mtime_ns)


def large_files(git: IsolatedGit, root: str, spec: tuple[str, ...]) -> dict[str, Unread]:
    """The work tree's files (beneath ``root``, within the pathspec ``spec``) that ``git add``
    would hash and that are over the limit: absolute path -> size and time. Only the files git
    sees as changed or untracked are looked at (one ``ls-files``, stat data only)."""
    out = git.run("ls-files", "-z", "--modified", "--others", "--exclude-standard", "--full-name", *spec, cwd=root)
    found = {}
    for name in set(out.split(b"\0")) - {b""}:
        path = os.path.join(git.repo.top, os.fsdecode(name))
        try:
            big = too_large(path, os.lstat(path))
        except OSError:
            continue
        if big is not None:
            found[path] = big
    return found


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB"):
        value /= 1024
        if value < 1024 or unit == "GiB":
            break
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"
