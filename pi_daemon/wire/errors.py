"""The protocol's errors: one exception class per JSON-RPC error code, each declared once, for both faces.

A handler raises one of these (``raise AgentBusy("...")``); the peer turns it into the
error reply. The session layer sits below the protocol and knows nothing of codes:
:data:`pi_daemon.host.errors.LOWER_LAYER_ERRORS` says which protocol error each of its
exceptions is. The native face and ACP share every code: ``-32002`` is ACP's "resource
not found", an unknown session in both, and ``-32000`` ACP's "authentication required".
This module imports nothing: the wire, the host and both faces use it.
"""

from __future__ import annotations

from typing import Any, ClassVar

CODES: dict[int, type["RpcError"]] = {}
"""Every error code of the protocol -> its class (and ``meaning`` for the docs)."""


class RpcError(Exception):
    """An error reply: ``code`` is the class's, ``message`` says what went wrong."""

    code: ClassVar[int] = -32603
    meaning: ClassVar[str] = ""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def __init_subclass__(cls, *, code: int | None = None, meaning: str = "", **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if code is None:
            return
        if code in CODES:
            raise ValueError(f"error code {code} is declared twice: {CODES[code].__name__} and {cls.__name__}")
        cls.code, cls.meaning = code, meaning
        CODES[code] = cls


class ParseError(RpcError, code=-32700,
                 meaning="invalid JSON, nesting deeper than 1024 levels, an unreadable header (id is null)"):
    pass


class InvalidRequest(RpcError, code=-32600, meaning="not a request object, no method, bad id, batch array"):
    pass


class MethodNotFound(RpcError, code=-32601, meaning="unknown method"):
    pass


class InvalidParams(RpcError, code=-32602, meaning="params do not fit the method; the message names the field"):
    pass


class InternalError(RpcError, code=-32603,
                    meaning="a handler failed; the message says how (details go to the log)"):
    pass


class RequestCancelled(RpcError, code=-32800, meaning="cancelled by $/cancelRequest"):
    pass


class AuthRequired(RpcError, code=-32000, meaning="the model's provider needs a key that is not set "
                   "(ACP's \"authentication required\")"):
    pass


class AgentBusy(RpcError, code=-32001, meaning="a run is active and the request needs an idle session"):
    pass


class SessionNotFoundError(RpcError, code=-32002, meaning="no session with that id (ACP's \"resource not found\")"):
    pass


class InvalidState(RpcError, code=-32003, meaning="the session cannot do that now (e.g. nothing to continue)"):
    pass


class ModelUnavailableError(RpcError, code=-32004, meaning="unknown model, or its API key is missing"):
    pass


class FrameTooLarge(RpcError, code=-32005,
                    meaning="a frame exceeded --max-frame-bytes and was skipped (id is null)"):
    pass


class SessionLockedError(RpcError, code=-32006, meaning="another process has the session file open"):
    pass


class SessionFile(RpcError, code=-32007,
                  meaning="the file is missing, unreadable, not a session file, or outside the session folder"):
    pass


class SessionWriteFailed(RpcError, code=-32008, meaning="the session file could not be written "
                         "(disk full, I/O error); nothing of it was kept"):
    pass


class SessionReadOnlyError(RpcError, code=-32009, meaning="the session is open read-only "
                           "(read-only folder, or a file outside the session folder)"):
    pass


class UnknownCommandError(RpcError, code=-32010, meaning="the text starts with /name and no command has that name "
                          "(start it with // to send it as text)"):
    pass


# The codes by name, for code that needs the number (framing errors, tests).
PARSE_ERROR = ParseError.code
INVALID_REQUEST = InvalidRequest.code
METHOD_NOT_FOUND = MethodNotFound.code
INVALID_PARAMS = InvalidParams.code
INTERNAL_ERROR = InternalError.code
REQUEST_CANCELLED = RequestCancelled.code
AUTH_REQUIRED = AuthRequired.code
SESSION_NOT_FOUND = SessionNotFoundError.code
AGENT_BUSY = AgentBusy.code
INVALID_STATE = InvalidState.code
MODEL_UNAVAILABLE = ModelUnavailableError.code
FRAME_TOO_LARGE = FrameTooLarge.code
SESSION_LOCKED = SessionLockedError.code
SESSION_FILE = SessionFile.code
SESSION_WRITE_FAILED = SessionWriteFailed.code
SESSION_READ_ONLY = SessionReadOnlyError.code
UNKNOWN_COMMAND = UnknownCommandError.code


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


def invalid_params(where: str, problem: str) -> InvalidParams:
    """``invalid params: params.x: what is wrong`` (``where`` names the field as sent)."""
    return InvalidParams(f"invalid params: {where}: {problem}")
