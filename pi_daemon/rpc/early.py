"""Requests served before pygls is loaded: the first prompt does not wait for the JSON-RPC engine.

Importing pygls (and lsprotocol's ~700 classes with it) costs more CPU than everything
else a first prompt needs. So the daemon starts serving without it: a request that
arrives before pygls is loaded runs its handler (:func:`.dispatch.feature`, the same
coroutine pygls runs) as a task here, and its reply is written as pygls would write it
(the result, the handler's :class:`.errors.RpcError`, or ``-32800`` once cancelled by
``$/cancelRequest``). Frames are checked before they get here (:meth:`.server.Daemon.dispatch`),
exactly as before pygls.

pygls is imported in a background thread at the first idle moment (:class:`IdleLoad`), or
at once when the daemon needs it to send a request of its own (``permission/request``,
``fs/*``, ``workspace/trust``): responses to daemon requests only ever go through pygls.
From then on every new frame goes to pygls; requests still running here finish here.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any, Callable, Coroutine

from .errors import REQUEST_CANCELLED, RpcError
from .framing import dumps

log = logging.getLogger(__name__)

REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("pi_daemon_early_request_id", default=None)
"""The id of the request an early task serves (pygls keeps its own for the requests it runs)."""


class EarlyDispatcher:
    """Runs checked requests and notifications as tasks and writes their replies with ``send``;
    ``handlers`` gives a method's coroutine (:func:`.dispatch.feature`)."""

    def __init__(self, send: Callable[[bytes], None],
                 handlers: Callable[[str], Callable[[Any], Coroutine[Any, Any, Any]] | None]) -> None:
        self._send = send
        self._handler = handlers
        self.tasks: dict[Any, asyncio.Task[Any]] = {}

    def request(self, request_id: Any, method: str, params: Any) -> None:
        handler = self._handler(method)
        assert handler is not None, method  # the frame check refuses unknown methods
        log.debug("%s %r served before pygls is loaded", method, request_id)
        context = contextvars.copy_context()
        context.run(REQUEST_ID.set, request_id)
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(handler(params), context=context)
        self.tasks[request_id] = task
        task.add_done_callback(lambda done: self._answer(request_id, done))

    def _answer(self, request_id: Any, task: asyncio.Task[Any]) -> None:
        if self.tasks.get(request_id) is task:
            del self.tasks[request_id]
        if task.cancelled():
            error: dict[str, Any] = {"code": REQUEST_CANCELLED, "message": f'Request with id "{request_id}" is canceled'}
        else:
            exc = task.exception()
            if exc is None:
                self._send(dumps({"jsonrpc": "2.0", "id": request_id, "result": task.result()}))
                return
            if not isinstance(exc, RpcError):  # feature() turns every failure into an RpcError
                log.error("request %r failed", request_id, exc_info=exc)
                exc = RpcError(f"{type(exc).__name__}: {exc}")
            error = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
        self._send(dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))

    def notification(self, method: str, params: Any) -> None:
        handler = self._handler(method)
        assert handler is not None, method  # the frame check drops unknown notifications
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(handler(params))
        task.add_done_callback(_log_failure)

    def cancel(self, request_id: Any) -> bool:
        """``$/cancelRequest`` for a request running here; False when it is not one of ours."""
        task = self.tasks.get(request_id)
        if task is None:
            return False
        task.cancel()
        return True


def _log_failure(task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.warning("a notification's handler failed: %s", task.exception())


class IdleLoad:
    """Imports pygls in a background thread once the daemon has been idle for ``quiet_s``
    (no frame read or written), then calls ``ready`` on the loop. The check is a timer that
    runs only until the import has started: an idle daemon does not keep waking up.

    A second, not less: the import holds the GIL for a few hundred milliseconds on a busy
    host, and a prompt typed right after the client's first requests should not meet it."""

    def __init__(self, activity: Callable[[], int], ready: Callable[[], None], quiet_s: float = 1.0) -> None:
        self._activity = activity
        self._ready = ready
        self._quiet_s = quiet_s
        self._last = -1
        self._handle: asyncio.TimerHandle | None = None
        self.started = False

    def start(self) -> None:
        self._handle = asyncio.get_running_loop().call_later(self._quiet_s, self._check)

    def _check(self) -> None:
        now = self._activity()
        if now != self._last:  # busy: look again later
            self._last = now
            self.start()
            return
        self._begin()

    def _begin(self) -> None:
        self.started = True
        loop = asyncio.get_running_loop()

        def load() -> None:
            try:
                from . import engine  # noqa: F401 (imports pygls)
            except Exception:  # noqa: BLE001 - then it is imported where it is needed, and fails there
                log.exception("loading pygls failed")
                return
            try:
                loop.call_soon_threadsafe(self._ready)
            except RuntimeError:  # the loop has closed: the daemon is exiting
                pass

        threading.Thread(target=load, name="pi-daemon-engine-import", daemon=True).start()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
