"""Script the daemon from Python: start it, call its methods, read its events — typed.

Two clients over one protocol declaration (:mod:`pi_daemon.rpc.registry`):

* :class:`Client` blocks (a reader thread); :class:`AsyncClient` is for asyncio code.
* ``request("session/new", SessionNewParams(...))`` sends the params (an attrs object or a
  plain dict) and returns the method's declared result class; an error reply raises the
  protocol's own error class (:mod:`pi_daemon.rpc.errors`: ``AgentBusy``, ``InvalidParams`` …).
* Events come as :class:`~pi_daemon.rpc.types.AgentEventParams` whose ``event`` is one of
  the classes of :mod:`pi_daemon.events`.
* A daemon -> client request (``permission/request``, ``workspace/trust``) is answered by
  the handler given for it in ``handlers``; without one it gets an error reply.

Example::

    with Client("--model", "faux/echo") as pi:
        pi.request("prompt", PromptParams(text="hello"))
        for params in pi.events():
            if isinstance(params.event, AgentSettled):
                break
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
import typing
from typing import IO, Any, Awaitable, Callable, Iterator, Literal, Mapping

import attrs

from .converter import converter, from_wire, to_wire
from .rpc import methods as _methods
from .wire.errors import CODES, RpcError
from .rpc.registry import CLIENT_REQUESTS, METHODS
from .events import AssistantMessageDelta, MessageUpdate
from .json_read import loads
from .rpc.types import AGENT_EVENT, AgentEventParams

_methods.load_all()  # every method declared: results are typed by it

RequestHandler = Callable[[Any], Any]
_structure_event = converter.get_structure_hook(AgentEventParams)  # looked up once: the hot path
Framing = Literal["ndjson", "content-length"]


def daemon_command(*args: str) -> list[str]:
    """The command that starts this installation's daemon with ``args``. ``-P``: the daemon's
    current directory (the workspace, not trusted yet) is not put on ``sys.path``, so none of
    its files can stand in for a module the interpreter imports at start-up."""
    return [sys.executable, "-P", "-m", "pi_daemon", *args]


def error_from_reply(error: Mapping[str, Any]) -> RpcError:
    """The protocol error class of an error reply (``RpcError`` for a code it does not know)."""
    cls = CODES.get(error.get("code"), RpcError)  # type: ignore[arg-type]
    exc = cls(str(error.get("message", "")), error.get("data"))
    if cls is RpcError:
        exc.code = error.get("code", RpcError.code)  # type: ignore[misc]
    return exc


def read_frames(stream: IO[bytes], framing: Framing = "ndjson") -> Iterator[list[tuple[bytes, bytes]]]:
    """The frames of ``stream`` as (the frame as read, its JSON body), until it ends, in batches:
    every frame that had arrived by the time of a read (a fast daemon's events come many at once)."""
    if framing == "ndjson":
        rest = b""
        while chunk := stream.read1(1 << 16):  # type: ignore[attr-defined]
            *lines, rest = (rest + chunk).split(b"\n")
            if lines:
                yield [(line + b"\n", line) for line in lines]
        if rest.strip():
            yield [(rest, rest)]
        return
    while True:
        header = b""
        length = None
        while (line := stream.readline()) not in (b"\r\n", b"\n"):
            if not line:
                return
            header += line
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise ValueError(f"a frame header without Content-Length: {header!r}")
        body = stream.read(length)
        yield [(header + line + body, body)]




# The streamed deltas ({type, contentIndex, delta}): most frames of an answer are one of them
# in a message_update, and building those directly reads a long answer as fast as bare
# json.loads (the result is the converter's own, tests/test_client.py checks it).
_DELTAS: dict[str, type] = {
    attrs.fields(cls).type.default: cls for cls in typing.get_args(AssistantMessageDelta)
    if [f.name for f in attrs.fields(cls) if f.metadata.get("wire") is not False] == ["type", "content_index", "delta"]
}


def structure_event(params: Any) -> AgentEventParams:
    """``agent/event`` params as :class:`AgentEventParams` (raises on a shape that does not fit)."""
    event = params.get("event") if type(params) is dict else None
    if type(event) is dict and len(params) == 3 and len(event) == 2 and event.get("type") == "message_update":
        delta = event.get("assistantMessageEvent")
        if type(delta) is dict and len(delta) == 3:
            cls = _DELTAS.get(delta.get("type"))  # type: ignore[arg-type]
            index, text = delta.get("contentIndex"), delta.get("delta")
            session_id, seq = params.get("sessionId"), params.get("seq")
            if (cls is not None and type(index) is int and type(text) is str and type(session_id) is str
                    and type(seq) is int):
                return AgentEventParams(session_id=session_id, seq=seq, event=MessageUpdate(
                    assistant_message_event=cls(content_index=index, delta=text)))
    return _structure_event(params, AgentEventParams)  # type: ignore[no-any-return]


def _params(params: Any) -> Any:
    return {} if params is None else (params if isinstance(params, Mapping) else to_wire(params))


def _result(method: str, value: Any) -> Any:
    spec = METHODS.get(method)
    return from_wire(value, spec.result) if spec is not None and spec.result is not None else value


def _settle(pending: Mapping[Any, tuple[str, Any]], message: dict[str, Any]) -> None:
    """Resolve the future (concurrent or asyncio) of the request that ``message`` answers."""
    method, future = pending.pop(message.get("id"), (None, None))  # type: ignore[attr-defined]
    if future is None or method is None or future.done():
        return
    if "error" in message:
        future.set_exception(error_from_reply(message["error"]))
        return
    try:
        future.set_result(_result(method, message.get("result")))
    except Exception as exc:  # noqa: BLE001 - a result that does not fit its type
        future.set_exception(exc)


def _abandon(pending: Mapping[Any, tuple[str, Any]]) -> None:
    for _, future in pending.values():
        if not future.done():
            future.set_exception(ConnectionError("the daemon exited without answering"))


class _Wire:
    """Frames <-> messages: what both clients share (NDJSON, ids, typing)."""

    def __init__(self, handlers: Mapping[str, RequestHandler] | None, framing: Framing = "ndjson") -> None:
        self.handlers = dict(handlers or {})
        self.framing = framing
        self.next_id = 0

    def request_message(self, method: str, params: Any) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": _params(params)}

    def frame(self, message: dict[str, Any]) -> bytes:
        return self.encode(json.dumps(message, separators=(",", ":")).encode())

    def encode(self, body: bytes) -> bytes:
        """``body`` framed."""
        if self.framing == "content-length":
            return b"Content-Length: %d\r\n\r\n" % len(body) + body
        return body + b"\n"

    @staticmethod
    def reply(request_id: Any, result: Any = None, error: BaseException | None = None,
              method: str = "") -> dict[str, Any]:
        """The reply to a daemon -> client request: its result, or an error reply."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = {"code": -32603, "message": f"{type(error).__name__}: {error}"}
        elif result is None:
            message["error"] = {"code": -32601, "message": f"this client does not answer {method}"}
        else:
            message["result"] = _params(result)
        return message

    @staticmethod
    def request_params(message: dict[str, Any]) -> Any:
        """A daemon -> client request's params, as its declared class."""
        spec = CLIENT_REQUESTS.get(message["method"])
        return from_wire(message.get("params"), spec.params) if spec is not None else message.get("params")

    @staticmethod
    def event(message: dict[str, Any]) -> AgentEventParams | None:
        if message.get("method") != AGENT_EVENT.name:
            return None
        return structure_event(message.get("params"))


class Client:
    """A daemon child process, driven from blocking code.

    Every message passes :meth:`sent` (before it is written) and :meth:`received` (as it
    is read, on the reader thread): a subclass that records or routes frames itself
    overrides them.
    """

    def __init__(self, *args: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
                 handlers: Mapping[str, RequestHandler] | None = None, framing: Framing = "ndjson",
                 stderr: int | IO[bytes] | None = None, command: list[str] | None = None) -> None:
        self._wire = _Wire(handlers, framing)
        self._pending: dict[int, tuple[str, Future[Any]]] = {}
        # Batches of events: one hand-over per read, not per event (20,000 deltas are 20,000 events).
        self._events: queue.Queue[list[AgentEventParams] | None] = queue.Queue()
        self._batch: list[AgentEventParams] = []
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(command or daemon_command(*args), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr, cwd=cwd, env=None if env is None else dict(env))
        self._reader = threading.Thread(target=self._read, name="pi-daemon-client", daemon=True)
        self._reader.start()

    def write(self, data: bytes) -> None:
        """Write ``data`` to the daemon's stdin as it is (one frame, or deliberately not one)."""
        assert self.proc.stdin is not None
        with self._lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        """Send one JSON-RPC message in this client's framing."""
        self.sent(message)
        self.write(self._wire.frame(message))

    def sent(self, message: dict[str, Any]) -> None:
        """Called with every message this client sends."""

    def received(self, frame: bytes, message: Any) -> None:
        """Called on the reader thread with every frame read (as read, and decoded)."""
        if not isinstance(message, dict):
            return
        if "method" in message and "id" in message:
            self.send(self._answer(message))
        elif "method" in message:
            event = self._wire.event(message)
            if event is not None:
                self._batch.append(event)
        else:
            self._flush()  # the events before a reply are there once its result is
            _settle(self._pending, message)

    def _flush(self) -> None:
        if self._batch:
            self._events.put(self._batch)
            self._batch = []

    def output_ended(self) -> None:
        """Called on the reader thread once the daemon's output has ended."""
        self._events.put(None)
        _abandon(self._pending)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            for frames in read_frames(self.proc.stdout, self._wire.framing):
                for frame, body in frames:
                    self.received(frame, loads(body))
                self._flush()
        finally:
            self.output_ended()

    def _answer(self, message: dict[str, Any]) -> dict[str, Any]:
        handler = self._wire.handlers.get(message["method"])
        try:
            result = handler(self._wire.request_params(message)) if handler is not None else None
        except Exception as exc:  # noqa: BLE001 - the daemon gets an error reply instead
            return self._wire.reply(message["id"], error=exc)
        return self._wire.reply(message["id"], result, method=message["method"])

    def next_request(self, method: str, params: Any = None) -> dict[str, Any]:
        """A request message with this client's next id (not sent yet)."""
        with self._lock:
            return self._wire.request_message(method, params)

    def request_future(self, method: str, params: Any = None) -> Future[Any]:
        """Send a request; the future resolves to its typed result."""
        future: Future[Any] = Future()
        message = self.next_request(method, params)
        self._pending[message["id"]] = (method, future)
        self.send(message)
        return future

    def request(self, method: str, params: Any = None, timeout: float | None = None) -> Any:
        """Call ``method``; its declared result class, or the protocol error it answered raised."""
        return self.request_future(method, params).result(timeout)

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": _params(params)})

    def events(self, timeout: float | None = None) -> Iterator[AgentEventParams]:
        """The events as they come; ends when the daemon's output ends (``queue.Empty`` on timeout)."""
        while True:
            batch = self._events.get(timeout=timeout)
            if batch is None:
                self._events.put(None)
                return
            yield from batch

    def close(self, timeout: float = 10.0) -> int:
        """Close stdin (the daemon settles its runs and exits) and wait for the exit code."""
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
        code = self.proc.wait(timeout)
        self._reader.join(timeout)
        return code

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            try:
                self.close()
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class AsyncClient:
    """A daemon child process, driven from asyncio code (``await AsyncClient.start(...)``)."""

    def __init__(self, proc: asyncio.subprocess.Process,
                 handlers: Mapping[str, Callable[[Any], Any | Awaitable[Any]]] | None) -> None:
        self.proc = proc
        self._handlers = dict(handlers or {})
        self._wire = _Wire(None)
        self._pending: dict[int, tuple[str, asyncio.Future[Any]]] = {}
        self._events: asyncio.Queue[AgentEventParams | None] = asyncio.Queue()
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def start(cls, *args: str, cwd: str | None = None, env: Mapping[str, str] | None = None,
                    handlers: Mapping[str, Callable[[Any], Any | Awaitable[Any]]] | None = None) -> "AsyncClient":
        proc = await asyncio.create_subprocess_exec(*daemon_command(*args), stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE, cwd=cwd,
                                                    env=None if env is None else dict(env),
                                                    limit=256 * 1024 * 1024)
        return cls(proc, handlers)

    def _write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    async def _answer(self, message: dict[str, Any]) -> None:
        handler = self._handlers.get(message["method"])
        try:
            result = handler(self._wire.request_params(message)) if handler is not None else None
            if asyncio.iscoroutine(result):
                result = await result
        except Exception as exc:  # noqa: BLE001 - the daemon gets an error reply instead
            self._write(self._wire.frame(self._wire.reply(message["id"], error=exc)))
            return
        self._write(self._wire.frame(self._wire.reply(message["id"], result, method=message["method"])))

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                message = loads(line)
                if "method" in message and "id" in message:
                    asyncio.ensure_future(self._answer(message))
                elif "method" in message:
                    event = self._wire.event(message)
                    if event is not None:
                        self._events.put_nowait(event)
                else:
                    _settle(self._pending, message)
        finally:
            self._events.put_nowait(None)
            _abandon(self._pending)

    async def request(self, method: str, params: Any = None) -> Any:
        """Call ``method``; its declared result class, or the protocol error it answered raised."""
        message = self._wire.request_message(method, params)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[message["id"]] = (method, future)
        self._write(self._wire.frame(message))
        return await future

    def notify(self, method: str, params: Any = None) -> None:
        self._write(self._wire.frame({"jsonrpc": "2.0", "method": method, "params": _params(params)}))

    async def events(self) -> Any:
        """Async iterator of the events; ends when the daemon's output ends."""
        while (item := await self._events.get()) is not None:
            yield item
        self._events.put_nowait(None)

    async def close(self) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        code = await self.proc.wait()
        await self._reader
        return code
