"""``session/search``: the workspace's conversations searched for a text, newest session first.

Only what was said is searched: the text of user messages and of assistant answers (not
tool output, thinking or bookkeeping). The files are the ones :mod:`.listing` lists, read
the same careful way (no link or special file followed, a block at a time, at most
:data:`.store.MAX_SESSION_BYTES` each). A ``message`` line is parsed only when its bytes can
hold the query: case-insensitively where the query's JSON form is the query itself (plain
ASCII), else every message line is parsed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from .. import json_read
from ..messages import message_from_wire, user_text
from .entry_lines import blocks
from .listing import BLOCK, MESSAGE, list_sessions, open_regular

SNIPPET_CHARS = 160
MAX_MATCHES_PER_SESSION = 20


def _lines(fd: int, size: int) -> Iterator[bytes]:
    """The file's ``message`` lines, each with its leading newline, a block at a time."""
    carry = b""
    at = 0
    for block in blocks(fd, size, BLOCK):
        at += len(block)
        data = carry + block
        cut = data.rfind(b"\n")
        whole, carry = (data, b"") if at >= size or cut < 0 else (data[:cut], data[cut:])
        for match in MESSAGE.finditer(whole):
            end = whole.find(b"\n", match.start() + 1)
            yield whole[match.start():end if end > 0 else len(whole)]


def said(message: dict[str, Any]) -> str:
    """The text of a user message or an assistant answer; "" for anything else."""
    role = message.get("role")
    if role == "user":
        try:
            return user_text(message_from_wire(message))
        except Exception:  # noqa: BLE001 - an unreadable message is not searched
            return ""
    if role == "assistant" and isinstance(message.get("content"), list):
        return "\n".join(part["text"] for part in message["content"]
                         if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return ""


def snippet(text: str, at: int, length: int) -> str:
    """About :data:`SNIPPET_CHARS` characters around a match, on one line."""
    start = max(0, at - (SNIPPET_CHARS - length) // 2)
    end = min(len(text), start + SNIPPET_CHARS)
    start = max(0, end - SNIPPET_CHARS)
    shown = " ".join(text[start:end].split())
    return ("…" if start > 0 else "") + shown + ("…" if end < len(text) else "")


def _matches(path: Path, needle: str, raw: bytes | None) -> Iterator[dict[str, Any]]:
    opened = open_regular(path)
    if opened is None:
        return
    fd, size = opened
    try:
        for line in _lines(fd, size):
            if raw is not None and raw not in line.lower():
                continue
            try:
                entry = json_read.loads(line[1:])
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if not isinstance(message, dict):
                continue
            text = said(message)
            at = text.lower().find(needle)
            if at >= 0:
                yield {"entryId": str(entry.get("id", "")), "role": message["role"],
                       "timestamp": str(entry.get("timestamp", "")), "snippet": snippet(text, at, len(needle))}
    except OSError:
        return
    finally:
        os.close(fd)


def search(folder: Path, query: str, limit: int) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` matches, newest session first (each session's in file order), and
    whether there were more."""
    needle = query.lower()
    plain = json.dumps(needle)[1:-1] == needle
    raw = needle.encode() if plain else None
    found: list[dict[str, Any]] = []
    for session in list_sessions(folder):
        if session.get("damaged"):
            continue
        per_session = 0
        for match in _matches(Path(session["file"]), needle, raw):
            if len(found) == limit:
                return found, True
            found.append({"sessionId": session["sessionId"], "file": session["file"], "name": session["name"],
                          "firstMessage": session["firstMessage"], **match})
            per_session += 1
            if per_session == MAX_MATCHES_PER_SESSION:
                break
    return found, False
