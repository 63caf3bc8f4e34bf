"""JSON-RPC error codes of the protocol and the exception that carries one to a reply."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800

SESSION_NOT_FOUND = -32001
AGENT_BUSY = -32002
INVALID_STATE = -32003
MODEL_UNAVAILABLE = -32004
FRAME_TOO_LARGE = -32005
SESSION_LOCKED = -32006
SESSION_FILE = -32007
SESSION_WRITE_FAILED = -32008
SESSION_READ_ONLY = -32009
UNKNOWN_COMMAND = -32010

CODES: dict[int, str] = {
    PARSE_ERROR: "invalid JSON, nesting deeper than 1024 levels, an unreadable header (id is null)",
    INVALID_REQUEST: "not a request object, no method, bad id, batch array",
    METHOD_NOT_FOUND: "unknown method",
    INVALID_PARAMS: "params do not fit the method; the message names the field",
    INTERNAL_ERROR: "a handler failed; the message says how (details go to the log)",
    REQUEST_CANCELLED: "cancelled by $/cancelRequest",
    SESSION_NOT_FOUND: "no session with that id",
    AGENT_BUSY: "a run is active and the request needs an idle session",
    INVALID_STATE: "the session cannot do that now (e.g. nothing to continue)",
    MODEL_UNAVAILABLE: "unknown model, or its API key is missing",
    FRAME_TOO_LARGE: "a frame exceeded --max-frame-bytes and was skipped (id is null)",
    SESSION_LOCKED: "another process has the session file open",
    SESSION_FILE: "the file is missing, unreadable, not a session file, or outside the session folder",
    SESSION_WRITE_FAILED: "the session file could not be written (disk full, I/O error); nothing of it was kept",
    SESSION_READ_ONLY: "the session is open read-only (read-only folder, or a file outside the session folder)",
    UNKNOWN_COMMAND: "the text starts with /name and no command has that name (start it with // to send it as text)",
}


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def shorten(text: str, limit: int = 100) -> str:
    """Client-supplied text quoted in an error message: at most ``limit`` characters."""
    return text if len(text) <= limit else text[:limit] + "…"


def preview(value: object) -> str:
    """A short description of a client-supplied JSON value for the log (never deep or huge)."""
    if isinstance(value, dict):
        return f"an object with keys {shorten(', '.join(map(str, list(value)[:10])))}"
    if isinstance(value, list):
        return f"an array of {len(value)}"
    return shorten(repr(value))
