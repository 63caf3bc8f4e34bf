"""HTTP/1.1 for provider requests: asyncio streams and the llhttp parser (httptools).

httpx's own transport goes through httpcore, anyio and h11: per request it builds h11 events,
takes pool locks and checkpoints, and checks a kept-alive connection through anyio's socket
wrappers, which together were over a third of a tool turn's samples against a loopback server;
importing httpx (idna, email, urllib.request, http.cookiejar with it) was a sixth of the CPU
from the daemon's start to its first streamed text. :class:`Http11Transport` does only what a
provider request needs: it keeps idle connections per origin (for ``KEEP_ALIVE_EXPIRY``), writes
the request head and body in one write, and hands the answer on as it arrives (chunked,
``Content-Length`` or delimited by the close), decoding ``gzip`` and ``deflate``
(:mod:`.content_coding`). TLS is set up only for ``https`` origins, with the context made on
first use. A connection is kept only when its answer was read exactly to its end: an answer
aborted midway, or followed by bytes nobody asked for, closes it.

A request that finds a kept-alive connection dead (the server closed it while it was idle; the
answer had not begun) is sent once more on a new connection: the request never reached the
server. A new connection failing that way is an error. Failures are raised as the errors of
:mod:`.transport_errors`.
"""

from __future__ import annotations

import asyncio
import functools
import os
import ssl
import time
import zlib
from typing import AsyncIterator, Callable, Iterable, Iterator, NamedTuple
from urllib.parse import quote, urlsplit

import httptools

from .. import __version__
from .content_coding import ENCODINGS, Decoder
from .transport_errors import (ConnectError, ConnectTimeout, DecodingError, LocalProtocolError, ReadError,
                               ReadTimeout, RemoteProtocolError, TransportError, UnsupportedProtocol, WriteError,
                               WriteTimeout, joined_refusal)

_READ_SIZE = 65536
# An answer whose head has not ended within this many bytes is an error, not kept in memory as
# it grows (httpx allowed as much).
MAX_HEAD_SIZE = 100 * 1024
# A connection idle longer than this is closed rather than used again (httpx's default): a
# firewall or NAT may have dropped it without a word, and a request sent on it would wait out
# the whole read timeout. Servers close theirs after about as long (uvicorn, Node: 5 s).
KEEP_ALIVE_EXPIRY = 5.0
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")
# Sent with every request (a provider's own headers win); what an HTTP client is expected to say.
DEFAULT_HEADERS = {"accept": "*/*", "accept-encoding": "gzip, deflate", "connection": "keep-alive",
                   "user-agent": f"pi-daemon/{__version__}"}
_PATH_SAFE = "/%!$&'()*+,;=:@-._~"
_QUERY_SAFE = _PATH_SAFE + "?"


def environment_proxied() -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY`` in
    either case): httpx's own transport then serves the client, proxies and ``NO_PROXY`` included."""
    return any(value and key.lower() in _PROXY_VARIABLES for key, value in os.environ.items())


class Timeouts(NamedTuple):
    connect: float | None
    read: float | None
    write: float | None


class Target(NamedTuple):
    """A request URL in the parts the wire needs."""

    url: str
    scheme: str
    host: str  # as connected to (IDNA for a non-ASCII name)
    port: int
    host_header: bytes
    path: bytes  # path and query, as sent in the request line


@functools.lru_cache(maxsize=64)
def parse_url(url: str) -> Target:
    """``url`` taken apart once (a model's URL is the same every turn)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsupportedProtocol(f"invalid URL {url!r}: {exc}", url) from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsupportedProtocol(f"unsupported URL scheme {scheme!r}", url)
    host = parts.hostname or ""
    if not host:
        raise UnsupportedProtocol(f"no host in URL {url!r}", url)
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise UnsupportedProtocol(f"invalid host in URL {url!r}: {exc}", url) from None
    default = 443 if scheme == "https" else 80
    name = f"[{host}]" if ":" in host else host
    host_header = name if port is None or port == default else f"{name}:{port}"
    path = quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        path += "?" + quote(parts.query, safe=_QUERY_SAFE)
    return Target(url, scheme, host, port or default, host_header.encode("ascii"), path.encode("ascii"))


class _Dead(Exception):
    """A reused connection was found closed before any byte of the answer."""


class _Connection:
    """One socket, used for one request at a time; kept in its origin's pool between requests."""

    __slots__ = ("reader", "writer", "reused", "idle_since")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reused = False
        self.idle_since = 0.0

    def usable(self) -> bool:
        # Anything already received (the server's close, or bytes nobody asked for) retires it.
        return not self.writer.transport.is_closing() and not self.reader._buffer and not self.reader.at_eof()  # type: ignore[attr-defined]

    def close(self) -> None:
        self.writer.transport.abort()


_LENGTH, _CHUNKED = 1, 2


class _Answer:
    """httptools' callbacks for one response: the head, then body pieces as they are parsed.

    Bytes after the end of the answer (more than ``Content-Length`` said, or a second answer)
    belong to no request: they are dropped, never added to this answer's head or body, and
    the connection is not kept (``overrun``)."""

    __slots__ = ("parser", "headers", "headers_done", "body", "complete", "framed", "keep_alive", "overrun",
                 "status")

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        # What httpx (h11) read too: a head whose lines end in LF alone, and a chunked body that
        # also names a Content-Length (the chunks frame it; the connection is not kept).
        self.parser.set_dangerous_leniencies(lenient_chunked_length=True, lenient_optional_cr_before_lf=True)
        self.headers: list[tuple[bytes, bytes]] = []
        self.headers_done = False
        self.body: list[bytes] = []
        self.complete = False
        self.framed = 0  # _LENGTH, _CHUNKED or both: the end is known without the close
        self.keep_alive = False
        self.overrun = False
        self.status = 0

    def on_message_begin(self) -> None:
        if self.complete:
            self.overrun = True

    def on_header(self, name: bytes, value: bytes) -> None:
        if self.headers_done:  # a trailer of a chunked body, or the head of an answer nobody asked for
            return
        self.headers.append((name, value))
        lower = name.lower()
        if lower == b"content-length":
            self.framed |= _LENGTH
        elif lower == b"transfer-encoding" and b"chunked" in value.lower():
            self.framed |= _CHUNKED

    def on_headers_complete(self) -> None:
        if self.headers_done:
            return
        status = self.parser.get_status_code()
        if status < 200:  # 1xx: the answer follows on the same parser
            self.headers, self.framed = [], 0
            return
        self.headers_done = True
        self.status = status
        if status == 204 or status == 304:  # never a body
            self.framed = _LENGTH
        # llhttp forgets it once the message ends; both framings: a server not to trust again
        self.keep_alive = self.parser.should_keep_alive() and self.framed != _LENGTH | _CHUNKED

    def on_body(self, body: bytes) -> None:
        if not self.complete:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.headers_done:
            self.complete = True


_TIMEOUTS: dict[str, type[TransportError]] = {"connect": ConnectTimeout, "read": ReadTimeout, "write": WriteTimeout}


def _timeout_error(kind: str, url: str) -> TransportError:
    # No text, as httpx raised them (and still does behind a proxy): the error texts of
    # :mod:`.http` ("connection timed out (connect timeout)") stay what they were.
    return _TIMEOUTS[kind]("", url)


class _Exchange:
    """One request on one connection: sends it, reads the head, then streams the body."""

    __slots__ = ("transport", "conn", "method", "target", "answer", "read_timeout", "done")

    def __init__(self, transport: Http11Transport, conn: _Connection, method: str, target: Target,
                 read_timeout: float | None) -> None:
        self.transport = transport
        self.conn = conn
        self.method = method
        self.target = target
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
            raise _timeout_error("read", self.target.url) from exc
        except OSError as exc:
            raise ReadError(str(exc) or type(exc).__name__, self.target.url) from exc

    def _feed(self, data: bytes) -> None:
        answer = self.answer
        if answer.complete:
            answer.overrun = True
            return
        try:
            answer.parser.feed_data(data)
        except httptools.HttpParserUpgrade as exc:
            if answer.complete:  # an upgrade after the end of the answer: not this request's
                answer.overrun = True
                return
            raise RemoteProtocolError("the server switched protocols", self.target.url) from exc
        except httptools.HttpParserError as exc:
            if answer.complete:  # what follows the end of the answer is not this request's
                answer.overrun = True
                return
            raise RemoteProtocolError(f"malformed answer: {exc}", self.target.url) from exc

    async def head(self, request: bytes, write_timeout: float | None) -> None:
        """Send the request and read up to the end of the answer's head."""
        conn, url = self.conn, self.target.url
        try:
            conn.writer.write(request)
            if conn.writer.transport.get_write_buffer_size():
                async with asyncio.timeout(write_timeout):
                    await conn.writer.drain()
        except TimeoutError as exc:
            raise _timeout_error("write", url) from exc
        except OSError as exc:
            self._early_answer(exc)
        answer = self.answer
        first = True
        received = 0
        while not answer.headers_done:
            if received > MAX_HEAD_SIZE:
                raise RemoteProtocolError(f"the answer's head is larger than {MAX_HEAD_SIZE} bytes", url)
            try:
                data = await self._read()
            except ReadError:
                if first and conn.reused:
                    raise _Dead() from None
                raise
            if not data:
                if first and conn.reused:
                    raise _Dead()
                raise RemoteProtocolError("Server disconnected without sending a response.", url)
            first = False
            received += len(data)
            self._feed(data)
        if self.method == "HEAD":
            answer.complete = True  # no body follows, whatever Content-Length says

    def _early_answer(self, exc: OSError) -> None:
        """The request could not be sent whole. A server may answer before reading it all (413
        for a body too large) and close: that answer, received already, is the one to report
        (as httpx did); the stream would raise the error before handing over what it holds."""
        reader = self.conn.reader
        early = bytes(reader._buffer)  # type: ignore[attr-defined]
        if early:
            reader._buffer.clear()  # type: ignore[attr-defined]
            self._feed(early)
            if self.answer.headers_done:
                return
        if self.conn.reused and not early:
            raise _Dead() from exc
        raise WriteError(str(exc) or type(exc).__name__, self.target.url) from exc

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
                    raise RemoteProtocolError("peer closed connection without sending complete message body",
                                              self.target.url)
                answer.complete = True  # delimited by the close
                continue
            self._feed(data)

    def _finish(self) -> None:
        if self.done:
            return
        self.done = True
        conn = self.conn
        answer = self.answer
        if answer.framed and answer.keep_alive and not answer.overrun and self.method != "HEAD" and conn.usable():
            self.transport._release(self.target, conn)
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


class Response:
    """An answer: its status and head at once, the body streamed (decoded) or read whole."""

    __slots__ = ("status_code", "headers", "url", "_exchange", "_decoders")

    def __init__(self, status: int, headers: dict[str, str], exchange: _Exchange) -> None:
        self.status_code = status
        self.headers = headers  # names in lower case; repeated fields joined with ", "
        self.url = exchange.target.url
        self._exchange = exchange
        encodings = [e.strip().lower() for e in headers.get("content-encoding", "").split(",")]
        self._decoders = [Decoder(e) for e in reversed(encodings) if e in ENCODINGS]

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        if not self._decoders:
            async for data in self._exchange:
                if data:
                    yield data
            return
        async for data in self._exchange:
            for piece in self._decode(data, False):
                yield piece
        for piece in self._decode(b"", True):
            yield piece
        if not self._exchange.answer.framed and any(decoder.cut_short() for decoder in self._decoders):
            # delimited by the close, the compressed stream's own end is the only sign it is whole
            raise DecodingError("the connection closed before the end of the compressed body")

    def _decode(self, data: bytes, last: bool) -> Iterator[bytes]:
        pieces: Iterable[bytes] = (data,)
        for decoder in self._decoders:
            pieces = decoder.through(pieces, last)
        try:
            for piece in pieces:
                if piece:
                    yield piece
        except zlib.error as exc:
            raise DecodingError(str(exc)) from exc

    async def aread(self) -> bytes:
        return b"".join([data async for data in self.aiter_bytes()])

    async def aclose(self) -> None:
        await self._exchange.aclose()


def _request_bytes(method: str, target: Target, headers: dict[str, str], body: bytes) -> bytes:
    host = target.host_header
    fields: list[bytes] = []
    for name, value in headers.items():
        if "\n" in value or "\r" in value or "\n" in name or "\r" in name or ":" in name:
            raise LocalProtocolError(f"Illegal header {name!r}", target.url)  # it would end the head early
        lower = name.lower()
        if lower == "host":  # a provider's own (a server behind a reverse proxy) replaces the URL's, once
            host = value.encode("utf-8")
        elif lower != "content-length" and lower != "transfer-encoding":  # the body is framed here
            fields += (name.encode("ascii"), b": ", value.encode("utf-8"), b"\r\n")
    parts = [method.encode("ascii"), b" ", target.path, b" HTTP/1.1\r\nhost: ", host, b"\r\n", *fields]
    if body or method not in ("GET", "HEAD"):
        parts.append(b"content-length: %d\r\n" % len(body))
    parts += (b"\r\n", body)
    return b"".join(parts)


class Http11Transport:
    """HTTP/1.1 with kept-alive connections per origin; ``tls`` makes the TLS context when the
    first ``https`` origin is reached."""

    def __init__(self, tls: Callable[[], ssl.SSLContext], max_idle: int = 8,
                 keep_alive_expiry: float = KEEP_ALIVE_EXPIRY) -> None:
        self._tls_factory = tls
        self._expiry = keep_alive_expiry
        self._tls: ssl.SSLContext | None = None
        self._max_idle = max_idle
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self.closed = False

    def _release(self, target: Target, conn: _Connection) -> None:
        idle = self._idle.setdefault((target.scheme, target.host, target.port), [])
        if self.closed or len(idle) >= self._max_idle:
            conn.close()
            return
        conn.reused = True
        conn.idle_since = time.monotonic()
        idle.append(conn)

    def _take(self, target: Target) -> _Connection | None:
        idle = self._idle.get((target.scheme, target.host, target.port))
        while idle:
            conn = idle.pop()
            if conn.usable() and time.monotonic() - conn.idle_since < self._expiry:
                return conn
            conn.close()
        return None

    async def _connect(self, target: Target, timeout: float | None) -> _Connection:
        tls = None
        if target.scheme == "https":
            if self._tls is None:
                self._tls = self._tls_factory()
            tls = self._tls
        name = target.host
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    name, target.port, ssl=tls, server_hostname=name if tls else None, limit=_READ_SIZE)
        except TimeoutError as exc:
            raise _timeout_error("connect", target.url) from exc
        except (OSError, ssl.SSLError) as exc:
            raise ConnectError(str(exc) or type(exc).__name__, target.url) from joined_refusal(exc)
        return _Connection(reader, writer)

    async def request(self, method: str, url: str, headers: dict[str, str], body: bytes,
                      timeouts: Timeouts) -> Response:
        """Send a request (``headers`` with lower-case names, ``host`` and ``content-length`` added
        here) and return its answer once the head has arrived; the caller reads the body and closes it."""
        target = parse_url(url)
        request = _request_bytes(method, target, headers, body)
        conn = self._take(target)
        if conn is None:
            conn = await self._connect(target, timeouts.connect)
        exchange = _Exchange(self, conn, method, target, timeouts.read)
        try:
            await exchange.head(request, timeouts.write)
        except _Dead:
            conn.close()  # closed by the server while idle: once more, on a new connection
            conn = await self._connect(target, timeouts.connect)
            exchange = _Exchange(self, conn, method, target, timeouts.read)
            await self._head_or_close(exchange, request, timeouts.write)
        except BaseException:
            conn.close()
            raise
        answer = exchange.answer
        fields: dict[str, str] = {}
        for raw_name, raw_value in answer.headers:
            name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
            fields[name] = f"{fields[name]}, {value}" if name in fields else value
        return Response(answer.status, fields, exchange)

    async def _head_or_close(self, exchange: _Exchange, request: bytes, write_timeout: float | None) -> None:
        try:
            await exchange.head(request, write_timeout)
        except _Dead as exc:  # cannot happen on a new connection; kept as the error it is
            exchange.conn.close()
            raise RemoteProtocolError("Server disconnected without sending a response.",
                                      exchange.target.url) from exc
        except BaseException:
            exchange.conn.close()
            raise

    async def aclose(self) -> None:
        self.closed = True
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
