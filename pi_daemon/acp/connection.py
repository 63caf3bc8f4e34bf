"""JSON-RPC 2.0 for the ACP face, on the daemon's own frame reader and writer.

Every request gets exactly one answer; bad input (unparsable JSON, a non-object, a bad
id, an unknown method, invalid params) gets a JSON-RPC error and the connection stays
up. The daemon's own requests to the client (permission, fs) are matched to their
answers by id. Nothing but protocol frames is written to stdout.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Awaitable, Callable

import orjson

from ..rpc import errors as E
from ..rpc.errors import preview, shorten
from ..rpc.framing import FrameError, encode
from ..rpc.incoming import ID_RULE, Refused, message_object, valid_id
from ..rpc.transport import EOF, FrameReader, FrameWriter

log = logging.getLogger(__name__)

RESOURCE_NOT_FOUND = -32002  # ACP's code for an unknown session
REQUEST_CANCELLED = E.REQUEST_CANCELLED

Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class AcpError(Exception):
    """A request refused with a JSON-RPC error (code, message, optional data)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def invalid_params(where: str, problem: str) -> AcpError:
    return AcpError(E.INVALID_PARAMS, f"invalid params: {where}: {problem}")


class ClientError(Exception):
    """The client answered one of the daemon's requests with an error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code


def dumps(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message)


class Connection:
    def __init__(self, reader: FrameReader, writer: FrameWriter, on_eof: Callable[[], None]) -> None:
        self.reader = reader
        self.writer = writer
        self.on_eof = on_eof
        self.requests: dict[str, Handler] = {}
        self.notifications: dict[str, Handler] = {}
        self.in_flight: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self._waiting: dict[Any, asyncio.Future[Any]] = {}
        self.closed = False

    # --- output ----------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(encode(dumps(message), self.reader.framing))

    def reply_error(self, request_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: dict[str, Any], timeout: float | None = None) -> Any:
        """Ask the client; its result, or :class:`ClientError`. Cancelling the wait forgets the request."""
        if self.closed:
            raise ClientError(E.INVALID_STATE, "the client's input is closed: it cannot answer")
        request_id = f"pi-{next(self._ids)}"
        future = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(request_id, None)

    # --- input -----------------------------------------------------------------------

    def on_items(self, items: list[Any]) -> None:
        for item in items:
            try:
                if item is EOF:
                    self._eof()
                elif isinstance(item, FrameError):
                    self.reply_error(None, E.FRAME_TOO_LARGE if item.too_large else E.PARSE_ERROR, item.message)
                else:
                    self.dispatch(item)
            except Exception:  # noqa: BLE001 - one bad frame never takes the ones after it along
                log.exception("a frame could not be handled")

    def _eof(self) -> None:
        self.closed = True
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ClientError(E.INVALID_STATE, "the client's input closed before it answered"))
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
            raise Refused(None, E.INVALID_REQUEST, ID_RULE)
        if data.get("jsonrpc") != "2.0":
            raise Refused(request_id, E.INVALID_REQUEST, 'jsonrpc must be "2.0"')
        method = data.get("method")
        if method is None:
            if has_id and ("result" in data or "error" in data):
                return self._answer(data)
            raise Refused(request_id, E.INVALID_REQUEST, "a request needs a method")
        if not isinstance(method, str):
            raise Refused(request_id, E.INVALID_REQUEST, "method must be a string")
        params = data.get("params", {})
        if params is None:
            params = {}
        if not has_id:
            handler = self.notifications.get(method)
            if handler is None:
                # JSON-RPC answers no notification; unknown ones (e.g. other agents' extensions) are ignored.
                log.info("ignored notification %s", shorten(method))
                return
            if not isinstance(params, dict):
                raise Refused(None, E.INVALID_PARAMS, f"{shorten(method)}: params must be an object", reply=False)
            self._spawn(None, method, handler, params)
            return
        handler = self.requests.get(method)
        if handler is None:
            raise Refused(request_id, E.METHOD_NOT_FOUND, f"unknown method: {shorten(method)}")
        if not isinstance(params, dict):
            raise Refused(request_id, E.INVALID_PARAMS, "invalid params: params must be an object")
        self._spawn(request_id, method, handler, params)

    def _spawn(self, request_id: Any, method: str, handler: Handler, params: dict[str, Any]) -> None:
        task = asyncio.ensure_future(self._run(request_id, method, handler, params))
        self.in_flight.add(task)
        task.add_done_callback(self.in_flight.discard)

    async def _run(self, request_id: Any, method: str, handler: Handler, params: dict[str, Any]) -> None:
        notification = request_id is None
        try:
            result = await handler(params)
        except AcpError as exc:
            if notification:
                log.warning("%s: %s", method, exc.message)
            else:
                self.reply_error(request_id, exc.code, exc.message, exc.data)
            return
        except asyncio.CancelledError:
            if not notification:
                self.reply_error(request_id, REQUEST_CANCELLED, f"{method} was cancelled: the daemon is stopping")
            raise
        except Exception as exc:  # noqa: BLE001 - the reply stays clean; the log has it all
            log.exception("%s failed", method)
            if not notification:
                self.reply_error(request_id, E.INTERNAL_ERROR, f"{method} failed: {type(exc).__name__}: {exc}")
            return
        if not notification:
            self.send({"jsonrpc": "2.0", "id": request_id, "result": result if result is not None else {}})

    def _answer(self, data: dict[str, Any]) -> None:
        future = self._waiting.get(data["id"])
        if future is None or future.done():
            log.info("an answer to %s, which is not waited for (cancelled or timed out)", preview(data["id"]))
            return
        if "error" in data:
            error = data["error"] if isinstance(data["error"], dict) else {}
            code = error["code"] if type(error.get("code")) is int else E.INTERNAL_ERROR
            future.set_exception(ClientError(code, str(error.get("message") or "the client answered with an error")))
        else:
            future.set_result(data.get("result"))

    async def drain(self) -> None:
        """Wait until every request being handled has been answered."""
        while self.in_flight:
            await asyncio.wait(set(self.in_flight))
