"""HTTP/1.1 for provider requests: asyncio streams and the llhttp parser (httptools) under httpx.

httpx's own transport goes through httpcore, anyio and h11: per request it builds h11 events,
takes pool locks and checkpoints, and checks a kept-alive connection through anyio's socket
wrappers, which together were over a third of a tool turn's samples against a loopback server.
:class:`Http11Transport` does only what a provider request needs: it keeps idle connections per
origin, writes the request head and body in one write, and hands the answer to httpx as it
arrives (chunked, ``Content-Length`` or delimited by the close). TLS is set up only for
``https`` origins, with the context made on first use.

A request that finds a kept-alive connection dead (the server closed it while it was idle; the
answer had not begun) is sent once more on a new connection: the request never reached the
server. A new connection failing that way is an error. Failures are raised as the matching
httpx exceptions, and the request's ``timeout`` extension is honoured.
"""

from __future__ import annotations

import asyncio
import os
import ssl
from typing import AsyncIterator, Callable

import httptools
import httpx

_READ_SIZE = 65536
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def environment_proxied() -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` in
    either case): httpx's own transport then serves the client, proxies and ``NO_PROXY`` included."""
    return any(value and key.lower() in _PROXY_VARIABLES for key, value in os.environ.items())


class _Dead(Exception):
    """A reused connection was found closed before any byte of the answer."""


class _Connection:
    """One socket, used for one request at a time; kept in its origin's pool between requests."""

    __slots__ = ("reader", "writer", "reused")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reused = False

    def usable(self) -> bool:
        # Anything already received (the server's close, or bytes nobody asked for) retires it.
        return not self.writer.transport.is_closing() and not self.reader._buffer and not self.reader.at_eof()  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.transport.abort()


class _Answer:
    """httptools' callbacks for one response: the head, then body pieces as they are parsed."""

    __slots__ = ("parser", "headers", "headers_done", "body", "complete", "framed", "keep_alive")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.body: list[bytes] = []
        self.complete = False
        self.framed = False  # Content-Length or chunked: the end is known without the close
        self.keep_alive = False

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length" or (lower == b"transfer-encoding" and b"chunked" in value.lower()):
            self.framed = True

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:  # 1xx: the answer follows on the same parser
            self.headers, self.framed = [], False
            return
        self.headers_done = True
        if status == 204 or status == 304:  # never a body
            self.framed = True
        self.keep_alive = self.parser.should_keep_alive()  # llhttp forgets it once the message ends

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        if self.headers_done:
            self.complete = True


def _timeout_error(kind: str, request: httpx.Request) -> httpx.TimeoutException:
    cls = {"connect": httpx.ConnectTimeout, "read": httpx.ReadTimeout, "write": httpx.WriteTimeout}[kind]
    return cls(f"{kind} timed out", request=request)


class _Exchange:
    """One request on one connection: sends it, reads the head, then streams the body."""

    __slots__ = ("transport", "conn", "request", "origin", "answer", "read_timeout", "done")

    def __init__(self, transport: Http11Transport, conn: _Connection, request: httpx.Request,
                 origin: tuple[bytes, bytes, int], read_timeout: float | None) -> None:
        self.transport = transport
        self.conn = conn
        self.request = request
        self.origin = origin
        self.answer = _Answer()
        self.read_timeout = read_timeout
        self.done = False

    async def _read(self) -> bytes:
        reader = self.conn.reader
        try:
            if self.read_timeout is None:
                return await reader.read(_READ_SIZE)
            async with asyncio.timeout(self.read_timeout):
                return await reader.read(_READ_SIZE)
        except TimeoutError as exc:
            raise _timeout_error("read", self.request) from exc
        except OSError as exc:
            raise httpx.ReadError(str(exc) or type(exc).__name__, request=self.request) from exc

    def _feed(self, data: bytes) -> None:
        try:
            self.answer.parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            raise httpx.RemoteProtocolError("the server switched protocols", request=self.request) from exc
        except httptools.HttpParserError as exc:
            raise httpx.RemoteProtocolError(f"malformed answer: {exc}", request=self.request) from exc

    async def head(self, body: bytes, write_timeout: float | None) -> None:
        """Send the request and read up to the end of the answer's head."""
        conn, request = self.conn, self.request
        try:
            conn.writer.write(_request_bytes(request, body))
            if conn.writer.transport.get_write_buffer_size():
                async with asyncio.timeout(write_timeout):
                    await conn.writer.drain()
        except TimeoutError as exc:
            raise _timeout_error("write", request) from exc
        except OSError as exc:
            if conn.reused:
                raise _Dead() from exc
            raise httpx.WriteError(str(exc) or type(exc).__name__, request=request) from exc
        answer = self.answer
        first = True
        while not answer.headers_done:
            try:
                data = await self._read()
            except httpx.ReadError:
                if first and conn.reused:
                    raise _Dead() from None
                raise
            if not data:
                if first and conn.reused:
                    raise _Dead()
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
            first = False
            self._feed(data)
        if request.method == "HEAD":
            answer.complete = True  # no body follows, whatever Content-Length says

    async def __aiter__(self) -> AsyncIterator[bytes]:
        answer = self.answer
        while True:
            if answer.body:
                pieces = answer.body
                answer.body = []
                yield pieces[0] if len(pieces) == 1 else b"".join(pieces)
            if answer.complete:
                self._finish()
                return
            data = await self._read()
            if not data:
                if answer.framed:
                    raise httpx.RemoteProtocolError(
                        "peer closed connection without sending complete message body", request=self.request)
                answer.complete = True  # delimited by the close
                continue
            self._feed(data)

    def _finish(self) -> None:
        if self.done:
            return
        self.done = True
        conn = self.conn
        if self.answer.framed and self.answer.keep_alive and self.request.method != "HEAD" and conn.usable():
            self.transport._release(self.origin, conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        if self.done:
            return
        if self.answer.complete and not self.answer.body:
            self._finish()
        else:
            self.done = True
            self.conn.close()  # the answer was not read to its end: the connection is unusable


class _Stream(httpx.AsyncByteStream):
    __slots__ = ("exchange",)

    def __init__(self, exchange: _Exchange) -> None:
        self.exchange = exchange

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self.exchange.__aiter__()

    async def aclose(self) -> None:
        await self.exchange.aclose()


async def _body(request: httpx.Request) -> bytes:
    try:
        return request.content  # already in memory (content=bytes): no iteration
    except httpx.RequestNotRead:
        return b"".join([piece async for piece in request.stream])  # type: ignore[union-attr]


def _request_bytes(request: httpx.Request, body: bytes) -> bytes:
    url = request.url
    target = url.raw_path
    parts = [request.method.encode("ascii"), b" ", target, b" HTTP/1.1\r\n"]
    chunked = False
    for name, value in request.headers.raw:
        if name.lower() == b"transfer-encoding" and value.lower() == b"chunked":
            chunked = True
        parts += (name, b": ", value, b"\r\n")
    parts.append(b"\r\n")
    if chunked:  # httpx chose chunked for a streamed body; it is sent whole, as one chunk
        parts += (b"%x\r\n" % len(body), body, b"\r\n0\r\n\r\n") if body else (b"0\r\n\r\n",)
    else:
        parts.append(body)
    return b"".join(parts)


class Http11Transport(httpx.AsyncBaseTransport):
    """HTTP/1.1 with kept-alive connections per origin; ``tls`` makes the TLS context when the
    first ``https`` origin is reached."""

    def __init__(self, tls: Callable[[], ssl.SSLContext], max_idle: int = 8) -> None:
        self._tls_factory = tls
        self._tls: ssl.SSLContext | None = None
        self._max_idle = max_idle
        self._idle: dict[tuple[bytes, bytes, int], list[_Connection]] = {}
        self._closed = False

    def _release(self, origin: tuple[bytes, bytes, int], conn: _Connection) -> None:
        idle = self._idle.setdefault(origin, [])
        if self._closed or len(idle) >= self._max_idle:
            conn.close()
            return
        conn.reused = True
        idle.append(conn)

    def _take(self, origin: tuple[bytes, bytes, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            conn = idle.pop()
            if conn.usable():
                return conn
            conn.close()
        return None

    async def _connect(self, origin: tuple[bytes, bytes, int], request: httpx.Request,
                       timeout: float | None) -> _Connection:
        scheme, host, port = origin
        tls = None
        if scheme == b"https":
            if self._tls is None:
                self._tls = self._tls_factory()
            tls = self._tls
        name = host.decode("ascii")
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    name, port, ssl=tls, server_hostname=name if tls else None, limit=_READ_SIZE)
        except TimeoutError as exc:
            raise _timeout_error("connect", request) from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__, request=request) from exc
        return _Connection(reader, writer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        scheme = url.raw_scheme
        if scheme not in (b"http", b"https"):
            raise httpx.UnsupportedProtocol(f"unsupported URL scheme {url.scheme!r}", request=request)
        port = url.port or (443 if scheme == b"https" else 80)
        origin = (scheme, url.raw_host, port)
        timeouts = request.extensions.get("timeout") or {}
        body = await _body(request)  # read once: a retry sends it again
        conn = self._take(origin)
        if conn is None:
            conn = await self._connect(origin, request, timeouts.get("connect"))
        exchange = _Exchange(self, conn, request, origin, timeouts.get("read"))
        try:
            await exchange.head(body, timeouts.get("write"))
        except _Dead:
            conn.close()  # closed by the server while idle: once more, on a new connection
            conn = await self._connect(origin, request, timeouts.get("connect"))
            exchange = _Exchange(self, conn, request, origin, timeouts.get("read"))
            await self._head_or_close(exchange, body, timeouts.get("write"))
        except BaseException:
            conn.close()
            raise
        answer = exchange.answer
        status = answer.parser.get_status_code()
        return httpx.Response(status, headers=answer.headers, stream=_Stream(exchange),
                              extensions={"http_version": b"HTTP/1.1"})

    async def _head_or_close(self, exchange: _Exchange, body: bytes, write_timeout: float | None) -> None:
        try:
            await exchange.head(body, write_timeout)
        except _Dead as exc:  # cannot happen on a new connection; kept as the error it is
            exchange.conn.close()
            raise httpx.RemoteProtocolError("Server disconnected without sending a response.",
                                            request=exchange.request) from exc
        except BaseException:
            exchange.conn.close()
            raise

    async def aclose(self) -> None:
        self._closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
