"""One JSON-RPC 2.0 peer on the daemon's frame reader and writer: both protocol faces speak through it.

It serves the other side's requests (each handler runs as a task; its result, its
:class:`.errors.RpcError`, or ``-32800`` once a cancel notification or the daemon's stop
cancels it, is the one answer), runs handlers of notifications, sends the daemon's own
requests and matches their answers by id (a timeout or a cancelled wait withdraws the
request with a cancel notification), and answers every frame it cannot use with the
error it gets — unparsable JSON, a non-object, a bad id, an unknown method, a frame
over the size limit — while the connection stays up. Which methods exist, and what
their params must be, is the face's business: the peer hands a handler the raw params.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import logging
from typing import Any, Callable, Coroutine

from .errors import (FRAME_TOO_LARGE, INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
                     REQUEST_CANCELLED, RpcError, preview, shorten)
from .framing import FrameError, dumps, encode
from .incoming import ID_RULE, LSP_CANCEL, Cancelling, Refused, cancel_target, message_object, valid_id
from .transport import EOF, FrameReader, FrameWriter

log = logging.getLogger(__name__)

Handler = Callable[[Any], Coroutine[Any, Any, Any]]

REQUEST_ID: contextvars.ContextVar[Any] = contextvars.ContextVar("pi_daemon_request_id", default=None)
"""The id of the request the running handler serves."""


class ClientError(Exception):
    """The other side answered one of the daemon's requests with an error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class InputClosed(ClientError):
    """The other side's input is closed: a request to it can never be answered."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


class Peer:
    """``requests`` and ``notifications`` map a method to its handler (raw params -> result);
    ``on_eof`` is called once the input has ended; ``cancelling`` names the protocol's cancel
    notification (``$/cancelRequest{id}`` natively, ``$/cancel_request{requestId}`` in ACP)."""

    def __init__(self, reader: FrameReader, writer: FrameWriter, on_eof: Callable[[], None],
                 cancelling: Cancelling = LSP_CANCEL) -> None:
        self.reader = reader
        self.cancelling = cancelling
        self.writer = writer
        self.on_eof = on_eof
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, Handler] = {}
        self.closed = False  # the input has ended
        self._running: dict[Any, asyncio.Task[Any]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._cancelled_by: dict[asyncio.Task[Any], str] = {}
        self._waiting: dict[Any, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    # --- output ----------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(encode(dumps(message), self.reader.framing))

    def reply_error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def send_request(self, method: str, params: Any, msg_id: str | None = None) -> tuple[Any, asyncio.Future[Any]]:
        """Ask the other side; returns the request's id and the future of its result (an error
        answer sets :class:`ClientError`; once the input is closed, :class:`InputClosed`)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        request_id = msg_id if msg_id is not None else f"pi-{next(self._ids)}"
        if self.closed:
            future.set_exception(InputClosed(f"the client's input is closed: {method} cannot be answered"))
            return request_id, future
        self._waiting[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future

    def withdraw(self, request_id: Any, about: dict[str, Any] | None = None) -> None:
        """Give up a request of the daemon's: the cancel notification, unless the input has ended.
        ``about``: fields the notification carries besides the id (what the request was about)."""
        future = self._waiting.pop(request_id, None)
        if future is None:
            return
        future.cancel()
        if not self.closed:
            self.notify(self.cancelling.method, {self.cancelling.id_field: request_id, **(about or {})})

    async def request(self, method: str, params: Any, *, timeout: float | None = None,
                      msg_id: str | None = None) -> Any:
        """:meth:`send_request` and wait for the result; a timeout (TimeoutError) or a
        cancelled wait withdraws the request."""
        request_id, future = self.send_request(method, params, msg_id)
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.CancelledError, TimeoutError):
            self.withdraw(request_id)
            raise
        finally:
            self._waiting.pop(request_id, None)

    # --- input -----------------------------------------------------------------------

    def on_items(self, items: list[Any]) -> None:
        """What the reader decoded: frames, frame errors, and the end of the input."""
        for item in items:
            try:
                if item is EOF:
                    self._eof()
                elif isinstance(item, FrameError):
                    self.reply_error(None, FRAME_TOO_LARGE if item.too_large else PARSE_ERROR, item.message)
                else:
                    self.dispatch(item)
            except Exception:  # noqa: BLE001 - one bad frame never takes the ones after it along
                log.exception("a frame could not be handled")

    def _eof(self) -> None:
        self.closed = True
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(InputClosed("the client's input closed before it answered"))
        self.on_eof()

    def dispatch(self, frame: bytes) -> None:
        try:
            self._dispatch(message_object(frame))
        except Refused as exc:
            if exc.reply:
                self.reply_error(exc.request_id, exc.code, exc.message)
            else:
                log.warning("%s", exc.message)

    def _dispatch(self, data: dict[str, Any]) -> None:
        has_id = "id" in data
        request_id = data.get("id")
        if not valid_id(request_id):
            raise Refused(None, INVALID_REQUEST, ID_RULE)
        if data.get("jsonrpc") != "2.0":
            raise Refused(request_id, INVALID_REQUEST, 'jsonrpc must be "2.0"')
        method = data.get("method")
        if method is None:
            if has_id and ("result" in data or "error" in data):
                return self._answer(data)
            raise Refused(request_id, INVALID_REQUEST, "a request needs a method")
        if not isinstance(method, str):
            raise Refused(request_id, INVALID_REQUEST, "method must be a string")
        params = data.get("params")
        if not has_id:
            self._notification(method, params)
            return
        # A notification's method sent with an id still runs, and its answer says it is done.
        handler = self.requests.get(method) or self.notifications.get(method)
        if handler is None:
            raise Refused(request_id, METHOD_NOT_FOUND, f"unknown method: {shorten(method)}")
        context = contextvars.copy_context()
        context.run(REQUEST_ID.set, request_id)
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(handler(params), context=context)
        self._running[request_id] = task
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._reply(request_id, method, done))

    def _notification(self, method: str, params: Any) -> None:
        if method == self.cancelling.method:
            named, target = cancel_target(params, self.cancelling)
            task = self._running.get(target) if named else None
            if task is None:
                log.debug("%s for unknown or finished request %r", method, target)
            elif not task.done():
                self._cancelled_by.setdefault(task, method)
                task.cancel()
            return
        handler = self.notifications.get(method)
        if handler is None:
            if method in self.requests:
                # JSON-RPC forbids answering a notification, so the log is the only place to say so.
                log.warning("%s is a request and was sent without an id (as a notification); it was not run",
                            shorten(method))
            else:
                log.debug("ignored a notification of unknown method %s", shorten(method))
            return
        task = asyncio.get_running_loop().create_task(handler(params))
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._notified(method, done))

    def _notified(self, method: str, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if isinstance(exc, RpcError):
            log.warning("%s: %s", method, exc.message)
        elif exc is not None:
            log.error("the handler of %s failed", method, exc_info=exc)

    def _reply(self, request_id: Any, method: str, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if self._running.get(request_id) is task:
            del self._running[request_id]
        reason = self._cancelled_by.pop(task, "the daemon is stopping")
        if task.cancelled():
            self.reply_error(request_id, REQUEST_CANCELLED, f"{shorten(method)} was cancelled ({reason})")
            return
        exc = task.exception()
        if exc is None:
            self.send({"jsonrpc": "2.0", "id": request_id, "result": task.result()})
        elif isinstance(exc, RpcError):
            self.reply_error(request_id, exc.code, exc.message, exc.data)
        else:
            log.error("%s failed", method, exc_info=exc)
            self.reply_error(request_id, INTERNAL_ERROR, f"{shorten(method)} failed: {type(exc).__name__}: {exc}")

    def _answer(self, data: dict[str, Any]) -> None:
        future = self._waiting.pop(data["id"], None)
        if future is None or future.done():
            if data["id"] in self._running:
                log.warning("ignored a reply with the id of a client request: %s", preview(data["id"]))
            else:
                log.info("an answer to %s, which is not waited for (withdrawn or timed out)", preview(data["id"]))
            return
        if "error" not in data:
            future.set_result(data.get("result"))
            return
        error = data["error"]
        if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message", ""), str):
            future.set_exception(ClientError(error["code"], error.get("message") or "the client answered with an error",
                                             error.get("data")))
        else:  # still an answer: the request fails rather than waiting forever
            log.warning("malformed error reply from the client to %s: %s", preview(data["id"]), preview(error))
            future.set_exception(ClientError(INTERNAL_ERROR, "the client sent a malformed error reply"))

    # --- the end -----------------------------------------------------------------------

    async def drain(self) -> None:
        """Wait until every handler has finished and every request has its answer."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))
