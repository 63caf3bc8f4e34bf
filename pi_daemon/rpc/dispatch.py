"""From a registered method to the coroutine the peer runs for it: params structured, errors
translated (:func:`pi_daemon.host.errors.as_rpc_error`, the table both faces share), result to JSON."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Coroutine

from ..converter import to_wire
from ..host.errors import as_rpc_error
from ..wire.errors import InternalError, InvalidState
from .context import CURRENT, Context
from .params import structure_params
from .registry import MethodSpec

log = logging.getLogger(__name__)


def feature(ctx: Context, spec: MethodSpec[Any, Any],
            refused: Callable[[str], bool]) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    """The coroutine that serves ``spec``: its handler between the wire and the host.
    Returns the JSON-ready result; every failure is raised as an :class:`RpcError`;
    ``refused(method)`` says the daemon is shutting down and takes no more requests."""
    handler = spec.handler
    assert handler is not None, spec.name

    async def serve(raw_params: Any) -> Any:
        CURRENT.set(ctx)  # this task's (and the tasks it starts): the peer runs each handler as a task
        if refused(spec.name):
            raise InvalidState("the daemon is shutting down")
        try:
            params = structure_params(raw_params, spec.params)
            result = await handler(ctx, params)
            return to_wire(result) if result is not None else None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the reply stays clean; the log has it all
            error = as_rpc_error(exc)
            if error is None:
                log.exception("%s failed", spec.name)
                error = InternalError(f"{spec.name} failed: {type(exc).__name__}: {exc}")
            raise error from None

    serve.__name__ = f"rpc_{spec.name}"
    return serve
