"""Where the programs the daemon starts by name (git, ripgrep, bubblewrap, an MCP server's
``command``) are found.

``PATH`` may hold relative folders (``.``, or an empty entry, which means the same): a
program looked up there is found in the current folder, which for the daemon is the
workspace, so a repository could ship its own ``git``. Only ``PATH``'s absolute folders
are searched.
"""

from __future__ import annotations

import os
import shutil


def search_path() -> str:
    """``PATH`` without its relative entries."""
    return os.pathsep.join(p for p in os.environ.get("PATH", os.defpath).split(os.pathsep) if os.path.isabs(p))


def which(name: str) -> str | None:
    """The absolute path of ``name`` in ``PATH``'s absolute folders, or None."""
    return shutil.which(name, path=search_path())
