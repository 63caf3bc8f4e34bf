"""``session/list``: the workspace's sessions, newest first, without parsing whole files.

Entries are written with ``type`` as their first key, so counting and finding them is a
byte search over the file; only the header, the first user message and the last name
are parsed.

A session without any message and without a name is left out: nothing was said in it
(a session just created, or one whose first prompt was refused before it was stored).
One whose prompt was stored is listed even when no answer came, so it can be resumed.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from ..messages import message_from_wire, user_text

MESSAGE = re.compile(rb'\n\{\s*"type"\s*:\s*"message"\s*,')
NAME = re.compile(rb'\n\{\s*"type"\s*:\s*"session_info"\s*,')
USER = re.compile(rb'"role"\s*:\s*"user"')


def _line_at(data: bytes, start: int) -> Any:
    end = data.find(b"\n", start + 1)
    try:
        return json.loads(data[start + 1 : end if end > 0 else len(data)])
    except ValueError:
        return None


def _first_user(data: bytes) -> str:
    for match in MESSAGE.finditer(data):
        end = data.find(b"\n", match.start() + 1)
        if USER.search(data, match.start(), end if end > 0 else len(data)):
            entry = _line_at(data, match.start())
            message = entry.get("message") if isinstance(entry, dict) else None
            if isinstance(message, dict) and message.get("role") == "user":
                try:
                    return user_text(message_from_wire(message))
                except Exception:  # noqa: BLE001 - an unreadable entry: look at the next one
                    continue
    return ""


def describe(path: Path) -> dict[str, Any] | None:
    try:
        data = path.read_bytes()
        updated = path.stat().st_mtime
    except OSError:
        return None
    first_nl = data.find(b"\n")
    try:
        header = json.loads(data[: first_nl if first_nl >= 0 else len(data)])
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("type") != "session":
        return None
    name = None
    names = list(NAME.finditer(data))
    if names:
        entry = _line_at(data, names[-1].start())
        name = entry.get("name") if isinstance(entry, dict) else None
    return {
        "sessionId": header.get("id", ""),
        "file": str(path),
        "name": name,
        "firstMessage": _first_user(data)[:200],
        "createdAt": header.get("timestamp", ""),
        "updatedAt": dt.datetime.fromtimestamp(updated, dt.timezone.utc).isoformat(timespec="milliseconds")
        .replace("+00:00", "Z"),
        "messageCount": len(MESSAGE.findall(data)),
        "cwd": header.get("cwd", ""),
        "_mtime": updated,
    }


def list_sessions(folder: Path, cwd: str | None = None) -> list[dict[str, Any]]:
    if not folder.is_dir():
        return []
    found = [d for d in map(describe, folder.glob("*.jsonl")) if d is not None and (d["messageCount"] or d["name"])]
    if cwd is not None:
        found = [d for d in found if d["cwd"] == cwd]
    found.sort(key=lambda d: d["_mtime"], reverse=True)
    for d in found:
        del d["_mtime"]
    return found
