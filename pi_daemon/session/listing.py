"""``session/list``: the workspace's sessions, newest first, without parsing whole files.

Entries are written with ``type`` as their first key, so counting and finding them is a
byte search over the file; only the header, the first user message and the last name
are parsed.

A session without any message and without a name is left out: nothing was said in it
(a session just created, or one whose first prompt was refused before it was stored).
One whose prompt was stored is listed even when no answer came, so it can be resumed.

The folder comes with the workspace, so a file in it is data, never a path to follow: a
symlink, a FIFO or a device is not opened as one (``/dev/zero`` would never end, a FIFO
would hold the daemon), a file is read a block at a time up to :data:`MAX_SESSION_BYTES`,
the header and first message are looked for in the first :data:`PREFIX_BYTES`, and a line
too deeply nested to parse counts as unreadable. What cannot be described is listed with
``damaged`` saying why, never failing the list.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable

from .. import json_read
from ..messages import message_from_wire, user_text
from .entry_lines import MAX_LINE_BYTES, LongLine, line_runs
from .store import MAX_SESSION_BYTES

MESSAGE = re.compile(rb'\n\{\s*"type"\s*:\s*"message"\s*,')
NAME = re.compile(rb'\n\{\s*"type"\s*:\s*"session_info"\s*,')
USER = re.compile(rb'"role"\s*:\s*"user"')
PREFIX_BYTES = 1 << 20  # the header and the first user message are looked for here
BLOCK = 1 << 20
MAX_NAME_LINE = 64 << 10  # a session_info line longer than this is not read for its name
_ID = re.compile(r"_([0-9A-Za-z-]{1,64})\.jsonl\Z")
Reading = Callable[[bytes | LongLine], None]  # what else reads a file's lines as they are listed


def _line_at(data: bytes, start: int) -> Any:
    end = data.find(b"\n", start + 1)
    try:
        return json_read.loads(data[start + 1 : end if end > 0 else len(data)])
    except ValueError:
        return None


def _first_user(data: bytes) -> str:
    for match in MESSAGE.finditer(data):
        end = data.find(b"\n", match.start() + 1)
        if end < 0:
            break  # cut off at the prefix's end
        if USER.search(data, match.start(), end):
            entry = _line_at(data, match.start())
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict) and message.get("role") == "user":
                try:
                    return user_text(message_from_wire(message))
                except Exception:  # noqa: BLE001 - an unreadable entry: look at the next one
                    continue
    return ""


def _scan(fd: int, size: int, also: Reading | None) -> tuple[bytes, int, bytes | None]:
    """(the file's first :data:`PREFIX_BYTES`, its ``message`` lines, its last ``session_info``
    line), read a run of lines at a time; a line longer than a block (or, with ``also``,
    than :data:`.entry_lines.MAX_LINE_BYTES`) is counted by its start, the rest of it only
    passed over. ``also`` is given every run as it is read."""
    prefix = b""
    open_prefix = True  # until it holds PREFIX_BYTES or a line cut off
    count = 0
    name_line: bytes | None = None
    cap = BLOCK if also is None else MAX_LINE_BYTES
    for run in line_runs(fd, size, BLOCK, cap, numbered=also is not None):
        if also is not None:
            also(run)
        if isinstance(run, LongLine):
            count += MESSAGE.match(b"\n" + run.head) is not None
            if open_prefix:  # the prefix ends in it, as it would end in a line longer than itself
                prefix, open_prefix = (prefix + b"\n" if prefix else b"") + run.head, False
            continue
        if open_prefix:
            prefix += run[:PREFIX_BYTES - len(prefix)]
            open_prefix = len(prefix) < PREFIX_BYTES
        count += len(MESSAGE.findall(run))
        for match in NAME.finditer(run):
            end = run.find(b"\n", match.start() + 1)
            line = run[match.start():end if end > 0 else len(run)]
            name_line = line if len(line) <= MAX_NAME_LINE else name_line
    return prefix, count, name_line


def _damaged(path: Path, why: str, updated: float) -> dict[str, Any]:
    found = _ID.search(path.name)
    return {"sessionId": found.group(1) if found else "", "file": str(path), "name": None, "firstMessage": "",
            "createdAt": "", "updatedAt": _iso(updated), "messageCount": 0, "cwd": "", "damaged": why,
            "_mtime": updated}


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def describe(path: Path, also: Reading | None = None) -> dict[str, Any] | None:
    """The listing of one file: None when it is no session with anything said in it. ``also``
    is given the file's lines as they are read (see :func:`_scan`): a search reads each file
    once, the listing and the search together."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        try:
            updated = os.lstat(path).st_mtime
        except OSError:
            return None
        reason = "a symbolic link, not followed" if os.path.islink(path) else f"cannot be opened ({exc.strerror})"
        return _damaged(path, reason, updated)
    try:
        info = os.fstat(fd)
        updated = info.st_mtime
        if not stat.S_ISREG(info.st_mode):
            return _damaged(path, "not a regular file", updated)
        if info.st_size > MAX_SESSION_BYTES:
            return _damaged(path, f"larger than {MAX_SESSION_BYTES >> 20} MiB", updated)
        prefix, count, name_line = _scan(fd, info.st_size, also)
    except OSError as exc:
        return _damaged(path, f"cannot be read ({exc.strerror})", updated)
    finally:
        os.close(fd)
    first_nl = prefix.find(b"\n")
    try:
        header = json_read.loads(prefix[: first_nl if first_nl >= 0 else len(prefix)])
    except ValueError:
        return _damaged(path, "its first line is not a session header", updated)
    if not isinstance(header, dict) or header.get("type") != "session":
        return _damaged(path, "its first line is not a session header", updated)
    name = None
    if name_line is not None:
        entry = _line_at(b"\n" + name_line.lstrip(b"\n"), 0)
        name = entry.get("name") if isinstance(entry, dict) and isinstance(entry.get("name"), str) else None
    if not (count or name):
        return None
    found = {
        "sessionId": str(header.get("id", "")),
        "file": str(path),
        "name": name,
        "firstMessage": _first_user(prefix)[:200],
        "createdAt": str(header.get("timestamp", "")),
        "updatedAt": _iso(updated),
        "messageCount": count,
        "cwd": str(header.get("cwd", "")),
        "_mtime": updated,
    }
    for key in ("parentSessionId", "parentToolCallId"):  # a subagent's link to its parent
        if isinstance(header.get(key), str):
            found[key] = header[key]
    return found


def session_files(folder: Path) -> list[Path]:
    if os.path.islink(folder) or not folder.is_dir():
        return []  # a symlinked session folder is not read (SessionManager says why when writing)
    return sorted(folder.glob("*.jsonl"))


def list_sessions(folder: Path, cwd: str | None = None) -> list[dict[str, Any]]:
    found = [d for d in map(describe, session_files(folder)) if d is not None]
    if cwd is not None:
        found = [d for d in found if d["cwd"] == cwd or d.get("damaged")]
    found.sort(key=lambda d: d["_mtime"], reverse=True)
    for d in found:
        del d["_mtime"]
    return found
