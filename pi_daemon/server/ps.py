"""``pi-daemon ps``: this user's running servers, read from the info files of the runtime folder.

An info file whose lock nobody holds is a stale server's (killed, or the machine stopped): its
files are removed (the lock taken meanwhile, so a server starting at that moment is not touched)
and it is not listed.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from . import instance, runtime

COLUMNS = ("workspace", "pid", "sessions", "connections", "socket")


def servers() -> list[dict[str, Any]]:
    """The running servers' info, by workspace; stale entries cleaned."""
    try:
        folder = runtime.folder(create=False)
    except runtime.RuntimeFolderError:
        if not os.path.lexists(runtime.folder_path()):
            return []
        raise
    found = []
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".json"):
            continue
        files = runtime.Files("", os.path.join(folder, name[:-len(".json")]))
        info = instance.read_info(files.info)
        lock = instance.claim(files.lock, wait=0, create=False)
        if lock is None and os.path.exists(files.lock):
            if info is not None:
                found.append(info)
            continue
        if lock is not None:
            instance.remove(files)
            os.close(lock)
        else:
            try:
                os.unlink(files.info)
            except FileNotFoundError:
                pass
    return sorted(found, key=lambda info: str(info.get("workspace")))


def main(as_json: bool) -> int:
    try:
        running = servers()
    except runtime.RuntimeFolderError as exc:
        print(f"pi-daemon ps: {exc}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps([{key: info.get(key) for key in COLUMNS} for info in running], indent=2))
        return 0
    if not running:
        print("no pi-daemon server is running")
        return 0
    rows = [[str(info.get(key, "")) for key in COLUMNS] for info in running]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(COLUMNS)]
    for row in [[c.upper() for c in COLUMNS], *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    return 0
