"""A real HTTP/1.1 server on 127.0.0.1 that answers model requests from a script.

It runs in its own thread with its own event loop, so in-process tests and daemon
subprocesses can both talk to it. Each request takes the next scripted :class:`Reply`;
streamed replies go out with chunked transfer encoding, cut at arbitrary byte positions
(so chunk boundaries fall inside JSON), and can stall, or drop the connection midway.
The wire formats are built by :func:`openai_sse` and :func:`anthropic_sse` exactly as
the providers document them: ``data:`` lines, ``event:`` names, ``[DONE]``, keep-alive
comments and the providers' error bodies.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any, Callable

import attrs


@attrs.define
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    headers: dict[str, str] = attrs.field(factory=dict)
    piece: int = 7  # bytes per chunk on the wire
    delay: float = 0.0  # seconds between chunks
    drop_after: int | None = None  # close the connection after this many bytes of body
    stall_after: int | None = None  # stop sending (but keep the connection) after this many bytes
    hangup: bool = False  # close the connection on reading the request, answering nothing


@attrs.define
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    closed_at: float | None = None
    connection: int | None = None  # the same number for requests on one connection
    received_at: float = attrs.field(factory=time.monotonic)  # when its head and body had been read


class ThreadedServer:
    """A server on 127.0.0.1 in its own thread and event loop; connections go to ``_handle``."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait(5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
            self.port = self._server.sockets[0].getsockname()[1]
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._loop.stop()

        self._loop.call_soon_threadsafe(lambda: self._loop.create_task(stop()))
        self._thread.join(5)


class LoopbackServer(ThreadedServer):
    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.routes: dict[str, Reply] = {}  # path -> the same reply every time (GET /props, /v1/models)
        self.route_hits: list[Recorded] = []  # requests answered from routes, not the script
        self.answer: Callable[[Recorded], Reply] | None = None  # the reply to a request once the script is empty
        super().__init__()

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections = getattr(self, "connections", 0) + 1
        connection = self.connections
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                record = Recorded(method, path, headers, json.loads(raw) if raw else None)
                record.connection = connection
                if path in self.routes or method == "GET":  # a probe (/props, /v1/models), not a model request
                    self.route_hits.append(record)
                    await self._respond(writer, self.routes.get(path, Reply(
                        404, b'{"error":{"message":"File Not Found","type":"not_found_error"}}',
                        "application/json")), reader, record)
                    continue
                self.requests.append(record)
                reply = self.replies.pop(0) if self.replies else self.answer(record) if self.answer else Reply(
                    404, b'{"error":{"message":"the loopback server has no reply scripted"}}', "application/json")
                if reply.hangup:
                    break
                keep = await self._respond(writer, reply, reader, record)
                if not keep:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client went away, or the server is shutting down
        finally:
            writer.close()

    async def _respond(self, writer, reply: Reply, reader, record: Recorded) -> bool:
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 429: "Too Many Requests",
                  500: "Internal Server Error", 503: "Service Unavailable", 529: "Overloaded"}.get(reply.status, "X")
        head = [f"HTTP/1.1 {reply.status} {reason}", f"content-type: {reply.content_type}"]
        head += [f"{k}: {v}" for k, v in reply.headers.items()]
        if reply.content_type != "text/event-stream":
            head.append(f"content-length: {len(reply.body)}")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + reply.body)
            await writer.drain()
            return True
        head.append("transfer-encoding: chunked")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        sent = 0
        body = reply.body
        while sent < len(body):
            if reply.drop_after is not None and sent >= reply.drop_after:
                writer.transport.abort()  # the connection drops mid-stream
                return False
            if reply.stall_after is not None and sent >= reply.stall_after:
                await _wait_closed(reader)
                record.closed_at = time.monotonic()
                return False
            piece = body[sent : sent + reply.piece]
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            sent += len(piece)
            if reply.delay:
                await writer.drain()
                await asyncio.sleep(reply.delay)
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


async def _wait_closed(reader: asyncio.StreamReader) -> None:
    try:
        while await reader.read(1024):
            pass
    except ConnectionError:
        pass


# --- wire formats ---------------------------------------------------------------------



class TricklingServers(ThreadedServer):
    """HTTP servers on 127.0.0.1 that answer a byte a second (from the status line on), for as
    long as the client waits: one on a free port (``url``), more on :meth:`listen`. Counts the
    connections opened (``opened``) and those the client has closed (``closed``)."""

    ANSWER = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n" + b" " * 1000

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0
        self._more: list[asyncio.AbstractServer] = []
        super().__init__()

    def listen(self, port: int = 0) -> str | None:
        """The URL of one more server, on ``port`` (0: a free one); None when it is taken."""
        async def start() -> asyncio.AbstractServer:
            return await asyncio.start_server(self._handle, "127.0.0.1", port)

        try:
            server = asyncio.run_coroutine_threadsafe(start(), self._loop).result(5)
        except OSError:
            return None
        self._more.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.opened += 1
        gone = asyncio.ensure_future(self._until_closed(reader))
        try:
            for byte in self.ANSWER:
                writer.write(bytes([byte]))
                done, _ = await asyncio.wait([gone], timeout=1.0)
                if done:
                    break
            await gone
        except ConnectionError:
            pass
        finally:
            self.closed += 1
            gone.cancel()
            writer.close()

    @staticmethod
    async def _until_closed(reader: asyncio.StreamReader) -> None:
        while await reader.read(65536):
            pass

    def close(self) -> None:
        for server in self._more:
            self._loop.call_soon_threadsafe(server.close)
        super().close()


def openai_sse(chunks: list[dict], *, done: bool = True, keepalive: bool = True) -> bytes:
    out = [b": keep-alive\n\n"] if keepalive else []
    for chunk in chunks:
        out.append(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    if done:
        out.append(b"data: [DONE]\n\n")
    return b"".join(out)


def openai_chunk(delta: dict | None = None, finish: str | None = None, *, usage: dict | None = None,
                 model: str = "gpt-test") -> dict:
    chunk: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                             "model": model, "system_fingerprint": "fp_1"}
    chunk["choices"] = [] if delta is None else [
        {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def openai_usage(prompt: int, completion: int, cached: int = 0) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}, "completion_tokens_details": {"reasoning_tokens": 0}}


def openai_text(text: str, *, pieces: int = 3, finish: str = "stop", usage: tuple[int, int] = (12, 5)) -> bytes:
    size = max(1, len(text) // pieces)
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    chunks.append(openai_chunk({}, finish))
    chunks.append(openai_chunk(None, usage=openai_usage(*usage)))
    return openai_sse(chunks)


def openai_error(status: int, message: str, *, type_: str = "invalid_request_error", code: str | None = None,
                 headers: dict | None = None) -> Reply:
    body = json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}}).encode()
    return Reply(status, body, "application/json", headers or {})


def anthropic_sse(events: list[dict], *, ping: bool = True) -> bytes:
    out = []
    for n, event in enumerate(events):
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        if ping and n == 0:
            out.append(b'event: ping\ndata: {"type": "ping"}\n\n')
    return b"".join(out)


def anthropic_message(blocks: list[dict], stop_reason: str = "end_turn", *, input_tokens: int = 25,
                      output_tokens: int = 9, cache_read: int = 0, cache_write: int = 0) -> bytes:
    """A whole streamed message; each block is ``{"start": content_block, "deltas": [delta, ...]}``."""
    events = [{"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1, "cache_creation_input_tokens": cache_write,
                  "cache_read_input_tokens": cache_read}}}]
    for index, block in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block["start"]})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in block.get("deltas", [])]
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                   "usage": {"output_tokens": output_tokens}})
    events.append({"type": "message_stop"})
    return anthropic_sse(events)


def anthropic_error(status: int, type_: str, message: str, headers: dict | None = None) -> Reply:
    body = json.dumps({"type": "error", "error": {"type": type_, "message": message}}).encode()
    return Reply(status, body, "application/json", headers or {})
