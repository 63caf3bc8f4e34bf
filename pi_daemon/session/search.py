"""``session/search``: the workspace's conversations searched for a text, newest session first.

Only what was said is searched: the text of user messages and of assistant answers (not
tool output, thinking or bookkeeping). The files are the ones :mod:`.listing` lists, read
the same careful way (no link or special file followed, a block at a time, at most
:data:`.store.MAX_SESSION_BYTES` each). A ``message`` line is parsed only when its bytes can
hold the query: case-insensitively where the query's JSON form is the query itself (plain
ASCII), else every message line is parsed.

A message line longer than :data:`.entry_lines.MAX_LINE_BYTES` is passed over unread (one
enormous line would otherwise be held, lower-cased and parsed whole) and named in the
answer's ``skipped``, so the user knows a match may be there; the other sessions are searched
as usual.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .. import json_read
from ..messages import message_from_wire, user_text
from .entry_lines import MAX_LINE_BYTES, LongLine
from .listing import MESSAGE, describe, session_files

SNIPPET_CHARS = 160
MAX_MATCHES_PER_SESSION = 20
MAX_SKIPPED = 20  # long lines named in one answer
SEARCHED_ROLES = ("user", "assistant")
_ROLE = re.compile(rb'"role"\s*:\s*"([^"\\]{0,40})"')


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


def _passed_over(line: LongLine) -> str | None:
    """Why a long message line was not searched, or None when it holds nothing searched anyway
    (its start says it is a tool's result, say)."""
    role = _ROLE.search(line.head)
    if role is not None and role.group(1).decode() not in SEARCHED_ROLES:
        return None
    what = f"a {role.group(1).decode()} message" if role is not None else "a message"
    return (f"{what} of {line.size / (1 << 20):.0f} MiB, longer than the {MAX_LINE_BYTES >> 20} MiB a search "
            f"reads: not searched")


class FileMatches:
    """The matches in one file (at most :data:`MAX_MATCHES_PER_SESSION`) and its message lines
    too long to search, from its lines as :func:`.listing.describe` reads them."""

    def __init__(self, needle: str, raw: bytes | None) -> None:
        self.needle, self.raw = needle, raw
        self.found: list[dict[str, Any]] = []
        self.skipped: list[dict[str, Any]] = []

    def __call__(self, run: bytes | LongLine) -> None:
        if isinstance(run, LongLine):
            reason = _passed_over(run) if MESSAGE.match(b"\n" + run.head) else None
            if reason is not None and len(self.skipped) < MAX_SKIPPED:
                self.skipped.append({"line": run.number, "bytes": run.size, "reason": reason})
            return
        for match in MESSAGE.finditer(run):
            if len(self.found) == MAX_MATCHES_PER_SESSION:
                return
            end = run.find(b"\n", match.start() + 1)
            line = run[match.start() + 1:end if end > 0 else len(run)]
            if self.raw is None or self.raw in line.lower():
                self._match(line)

    def _match(self, line: bytes) -> None:
        try:
            entry = json_read.loads(line)
        except ValueError:
            return
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            return
        text = said(message)
        at = text.lower().find(self.needle)
        if at >= 0:
            self.found.append({"entryId": str(entry.get("id", "")), "role": message["role"],
                               "timestamp": str(entry.get("timestamp", "")),
                               "snippet": snippet(text, at, len(self.needle))})


def search(folder: Path, query: str, limit: int) -> tuple[list[dict[str, Any]], bool, list[dict[str, Any]]]:
    """Up to ``limit`` matches, newest session first (each session's in file order), whether
    there were more, and up to :data:`MAX_SKIPPED` message lines passed over as too long. Each
    file is read once: its listing and its matches together."""
    needle = query.lower()
    plain = json.dumps(needle)[1:-1] == needle
    raw = needle.encode() if plain else None
    sessions = []
    for path in session_files(folder):
        matches = FileMatches(needle, raw)
        session = describe(path, matches)
        if session is not None and not session.get("damaged"):
            sessions.append((session, matches))
    sessions.sort(key=lambda pair: pair[0]["_mtime"], reverse=True)
    found: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for session, matches in sessions:
        about = {"sessionId": session["sessionId"], "file": session["file"]}
        skipped += [{**about, **line} for line in matches.skipped][:MAX_SKIPPED - len(skipped)]
        for match in matches.found:
            if len(found) == limit:
                return found, True, skipped
            found.append({**about, "name": session["name"], "firstMessage": session["firstMessage"], **match})
    return found, False, skipped
