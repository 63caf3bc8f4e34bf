"""From a registered method to the coroutine that serves it: params structured, errors translated,
result to JSON. The same coroutine runs under pygls (:mod:`.engine`) and, before pygls is
loaded, under the early dispatcher (:mod:`.early`).

:func:`as_rpc_error` is the one place an exception becomes a JSON-RPC error: the
protocol's own errors carry their code; the lower layers' errors (which know nothing of
JSON-RPC) are looked up in :data:`LOWER_LAYER_ERRORS`; anything else is a bug and is
answered as an internal error without its traceback.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Callable, Coroutine

from ..commands.catalog import UnknownCommand
from ..converter import to_wire
from ..llm.registry import ModelUnavailable
from ..session import SessionError, SessionNotFound
from ..session.manager import EntryError, OutsidePath
from ..session.store import SessionFileError, SessionLocked, SessionReadOnly, SessionWriteError
from .errors import (
    AgentBusy,
    InternalError,
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
from .params import structure_params
from .registry import MethodSpec

if TYPE_CHECKING:
    from .server import Daemon

log = logging.getLogger(__name__)

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
    SessionError: lambda exc: _SESSION_REFUSALS[exc.kind](str(exc)),
    ModelUnavailable: lambda exc: ModelUnavailableError(str(exc)),
    UnknownCommand: lambda exc: UnknownCommandError(str(exc)),
}
"""A lower layer's exception class -> the protocol error it is."""


def as_rpc_error(exc: Exception) -> RpcError | None:
    """The protocol error ``exc`` stands for; None when it is a bug (an internal error)."""
    if isinstance(exc, RpcError):
        return exc
    for cls in type(exc).__mro__:
        translate = LOWER_LAYER_ERRORS.get(cls)
        if translate is not None:
            return translate(exc)
    return None


def feature(daemon: Daemon, spec: MethodSpec[Any, Any]) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    """The coroutine that serves ``spec``: its handler between the wire and the daemon.
    Returns the JSON-ready result; every failure is raised as an :class:`RpcError`."""
    handler = spec.handler
    assert handler is not None, spec.name

    async def serve(raw_params: Any) -> Any:
        task = asyncio.current_task()
        daemon.track_request(task)
        try:
            params = structure_params(raw_params, spec.params)
            result = await handler(daemon, params)
            return to_wire(result) if result is not None else None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the reply stays clean; the log has it all
            error = as_rpc_error(exc)
            if error is None:
                log.exception("%s failed", spec.name)
                error = InternalError(f"{spec.name} failed: {type(exc).__name__}: {exc}")
            raise error from None
        finally:
            daemon.untrack_request(task)

    serve.__name__ = f"rpc_{spec.name}"
    return serve
