"""The one error table: which protocol error each lower layer's exception is, for both faces.

The session layer, the model registry and the command catalog know nothing of JSON-RPC;
:func:`as_rpc_error` is the one place one of their exceptions becomes a protocol error
(:mod:`pi_daemon.wire.errors`), so the native face and ACP answer the same failure with
the same code. Anything not in the table is a bug and is answered as an internal error.
"""

from __future__ import annotations

from typing import Any, Callable

from ..commands.catalog import UnknownCommand
from ..llm.registry import ModelUnavailable
from ..session import SessionError, SessionNotFound
from ..session.manager import EntryError, OutsidePath
from ..session.store import SessionFileError, SessionLocked, SessionReadOnly, SessionWriteError
from ..wire.errors import (
    AgentBusy,
    InvalidParams,
    InvalidState,
    ModelUnavailableError,
    RpcError,
    SessionFile,
    SessionLockedError,
    SessionNotFoundError,
    SessionReadOnlyError,
    SessionWriteFailed,
    UnknownCommandError,
)

# SessionError says which refusal it is with ``kind`` (the session layer's own vocabulary).
_SESSION_REFUSALS: dict[str, type[RpcError]] = {
    "busy": AgentBusy, "state": InvalidState, "model": ModelUnavailableError,
}


def _write_failed(exc: SessionWriteError) -> RpcError:
    return SessionWriteFailed(str(exc), {"errno": exc.errno_name, "file": str(exc.path)})


LOWER_LAYER_ERRORS: dict[type[Exception], Callable[[Any], RpcError]] = {
    SessionNotFound: lambda exc: SessionNotFoundError(str(exc)),
    SessionLocked: lambda exc: SessionLockedError(str(exc)),
    SessionFileError: lambda exc: SessionFile(str(exc)),
    SessionWriteError: _write_failed,
    SessionReadOnly: lambda exc: SessionReadOnlyError(str(exc)),
    OutsidePath: lambda exc: InvalidParams(f"invalid params: params.{exc.field}: {exc}"),
    EntryError: lambda exc: InvalidParams(f"invalid params: params.entryId: {exc}"),
    SessionError: lambda exc: _SESSION_REFUSALS[exc.kind](str(exc), exc.data),
    ModelUnavailable: lambda exc: ModelUnavailableError(str(exc), exc.data),
    UnknownCommand: lambda exc: UnknownCommandError(str(exc)),
}
"""A lower layer's exception class -> the protocol error it is."""


def as_rpc_error(exc: BaseException) -> RpcError | None:
    """The protocol error ``exc`` stands for; None when it is a bug (an internal error)."""
    if isinstance(exc, RpcError):
        return exc
    for cls in type(exc).__mro__:
        translate = LOWER_LAYER_ERRORS.get(cls)
        if translate is not None:
            return translate(exc)
    return None
