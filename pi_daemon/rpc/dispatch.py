"""From a method's name to the coroutine the peer runs for it: the handler's module imported on the
method's first call (:mod:`.methods`), the host awaited (a plain stdio daemon opens it once
``initialize`` is answered), params structured, errors translated
(:func:`pi_daemon.host.errors.as_rpc_error`, the table both faces share), result to JSON; a
request about a session first takes its turn (:mod:`.ordering`)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Coroutine

from ..converter import to_wire
from ..wire.errors import InternalError, InvalidState, RpcError
from .context import CURRENT, Context
from .methods import BEFORE_THE_HOST, load
from .ordering import is_ordered
from .params import structure_params

log = logging.getLogger(__name__)


def feature(ctx: Context, name: str, refused: Callable[[str], bool]) -> Callable[[Any], Coroutine[Any, Any, Any]]:
    """The coroutine that serves the method ``name``: its handler between the wire and the host.
    Returns the JSON-ready result; every failure is raised as an :class:`RpcError`;
    ``refused(method)`` says the daemon is shutting down and takes no more requests."""
    needs_host = name not in BEFORE_THE_HOST
    ordered: bool | None = None  # known once the handler's module is loaded

    async def serve(raw_params: Any) -> Any:
        nonlocal ordered
        CURRENT.set(ctx)  # this task's (and the tasks it starts): the peer runs each handler as a task
        if refused(name):
            raise InvalidState("the daemon is shutting down")
        if needs_host:
            await ctx.hub.opened()
        spec = load(name)
        handler = spec.handler
        assert handler is not None, name
        if ordered is None:
            ordered = is_ordered(name, spec.params)
        waits = ctx.order.enter(name, raw_params) if ordered else None
        if waits:
            await asyncio.wait(waits)
        try:
            params = structure_params(raw_params, spec.params)
            result = await handler(ctx, params)
            return to_wire(result) if result is not None else None
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the reply stays clean; the log has it all
            # An RpcError is its own answer; the table of the others is loaded with the host.
            error = exc if isinstance(exc, RpcError) else _translated(exc)
            if error is None:
                log.exception("%s failed", name)
                error = InternalError(f"{name} failed: {type(exc).__name__}: {exc}")
            raise error from None

    serve.__name__ = f"rpc_{name}"
    return serve


def _translated(exc: Exception) -> RpcError | None:
    from ..host.errors import as_rpc_error  # the lower layers' errors: loaded with the host

    return as_rpc_error(exc)
