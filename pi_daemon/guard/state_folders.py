"""The daemon's own folders in a workspace's ``.pi/``, kept out of git.

``sessions/`` (the session files), ``blobs/`` (the contents a run's changes replaced),
``exports/`` (``/export``) and ``tmp/`` (long command output) are the daemon's: each gets a
``.gitignore`` of ``*`` (which ignores itself too) when the daemon writes into it, so
``git add -A`` leaves them out and nothing new shows in ``git status``. The rest of ``.pi/``
(``settings.json``, ``models.json``, ``mcp.json``, ``permissions.json``, ``prompts/``,
``skills/``) is the project's configuration, written by people and meant to be committed:
git sees it as it sees any file.
"""

from __future__ import annotations

import os

IGNORE_EVERYTHING = b"*\n"


def keep_out_of_git(folder_fd: int) -> None:
    """Give the folder open as ``folder_fd`` its ``.gitignore`` of ``*``, unless it has one (of any
    content: a file the user wrote is theirs). OSError: it could not be written."""
    try:
        fd = os.open(".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                     dir_fd=folder_fd)
    except FileExistsError:
        return
    try:
        os.write(fd, IGNORE_EVERYTHING)  # two bytes to a new regular file: one write (even "*" alone ignores all)
    finally:
        os.close(fd)
