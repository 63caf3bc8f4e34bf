"""HTTP for providers, on httpx: one shared client per model setting, SSE streams (httpx-sse)
that an abort closes at once, and the daemon's limits on what a server may send.

:func:`sse_stream` POSTs a JSON body and yields the server-sent events of the answer.
A non-2xx answer raises :class:`ProviderHTTPError` carrying the provider's own error
message and ``Retry-After``. The HTTP read runs in its own task so that cancelling
closes the connection immediately, whatever the provider code is waiting for. httpx
reads the proxy settings of the environment (``HTTP_PROXY``, ``HTTPS_PROXY``,
``ALL_PROXY``, ``NO_PROXY``) itself: one code path with a proxy or without; a server on this
machine is never asked through one (:mod:`.proxy`).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
from collections import deque
from http import HTTPStatus
from typing import Any, AsyncIterator, Awaitable, Callable

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent

from .. import __version__
from ..cancel import CancelToken, Cancelled
from .credentials import check_request
from .errors import ProviderErrorDetail, classify, parse_retry_after
from .model import Model
from .proxy import proxy_for, uses_environment_proxy
from .server_url import is_loopback

_clients: dict[tuple[int, float, float, bool, bool], Client] = {}
_END = object()  # the stream ended normally
# The connection died before the server sent anything back: a kept-alive connection the
# server had already closed (llama-server closes after every answer although it says
# Keep-Alive). The request never reached the model; it is sent again on a new connection.
_DEAD_BEFORE_ANSWER = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
ERROR_BODY_LIMIT = 1 << 20
PROBE_BODY_LIMIT = 1 << 20  # a GET's whole body (/props, a model list)
MAX_LINE_BYTES = 8 << 20  # one line of an event stream
MAX_EVENT_BYTES = 16 << 20  # one event of an event stream (its lines together)
MAX_UNTAKEN = (256, 4 << 20)  # events read but not yet taken (count, characters): past either, the socket waits
KEEPALIVE_EXPIRY_S = 5.0  # an idle connection is closed after this: a NAT may have dropped it
# Model answers are small text: asked uncompressed, a compressed answer is refused unread. httpx
# decodes a compressed piece whole, so one small piece could expand to gigabytes before any limit
# of the daemon's could count it.
HEADERS = {"user-agent": f"pi-daemon/{__version__}", "accept-encoding": "identity"}
_BOM = b"\xef\xbb\xbf"


class Unread(Exception):
    """An answer the daemon stopped reading; the server would send the same again."""

    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class TooLarge(Unread):
    """A server sent more than the daemon takes (a line, an event, an answer or a body)."""


class Compressed(Unread):
    """A server compressed its answer although the daemon asked for it uncompressed."""


class ProviderHTTPError(Exception):
    def __init__(self, message: str, detail: ProviderErrorDetail) -> None:
        super().__init__(message)
        self.detail = detail


class Encoded:
    """A part of a request body that is already JSON: it goes into the body as it is."""

    __slots__ = ("raw", "__weakref__")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw


def encode_json(value: Any) -> bytes:
    """Compact UTF-8 JSON of a request body, with :class:`Encoded` parts copied in."""
    try:
        return orjson.dumps(value, default=_fragment)
    except TypeError:  # a lone surrogate or an int beyond 64 bits: escape rather than fail
        return json.dumps(value, separators=(",", ":"), default=_decoded).encode("ascii")


def _fragment(value: Any) -> Any:
    if isinstance(value, Encoded):
        return orjson.Fragment(value.raw)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _decoded(value: Any) -> Any:
    if isinstance(value, Encoded):
        return json.loads(value.raw)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _plain(model: Model) -> bool:
    return model.base_url[:7].lower() == "http://"


def _tls(plain: bool) -> ssl.SSLContext:
    """What the client verifies TLS with: the store ``SSL_CERT_FILE`` or ``SSL_CERT_DIR``
    names, else certifi's (httpx's own default). Loading the certificate store costs tens of
    milliseconds; a plain ``http://`` server (a local one) never needs it, so its client gets
    a context that trusts no certificate: it cannot speak TLS to anyone (redirects are not
    followed), and verification stays on."""
    if plain:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class Client:
    """The connections of one model's requests: an ``httpx.AsyncClient``."""

    def __init__(self, model: Model, keep: int) -> None:
        timeout = httpx.Timeout(model.read_timeout, connect=model.connect_timeout)
        limits = httpx.Limits(max_keepalive_connections=keep, keepalive_expiry=KEEPALIVE_EXPIRY_S)
        self.http = httpx.AsyncClient(timeout=timeout, limits=limits, verify=_tls(_plain(model)), headers=HEADERS,
                                      trust_env=uses_environment_proxy(model.base_url))

    @property
    def is_closed(self) -> bool:
        return self.http.is_closed

    async def open(self, url: str, headers: dict[str, str], content: bytes, method: str = "POST",
                   timeout: float | None = None) -> httpx.Response:
        """The answer's head, its body to be read and the answer closed by the caller. No cookie
        a server set is sent back: a request carries the provider's headers and nothing else."""
        self.http.cookies.clear()
        request = self.http.build_request(method, url, headers=headers, content=content,
                                          timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout)
        response = await self.http.send(request, stream=True)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise Compressed(f"the server at {url} compressed its answer (content-encoding: {encoding}) although "
                             "the daemon asked for it uncompressed; it was not read", url)
        return response

    async def get(self, url: str, timeout: float | None = None, limit: int = PROBE_BODY_LIMIT,
                  headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """The status and the whole body of a GET; :class:`TooLarge` past ``limit`` bytes (decoded)."""
        response = await self.open(url, headers or {}, b"", "GET", timeout)
        try:
            body = bytearray()
            async for data in response.aiter_bytes():
                body += data
                if len(body) > limit:
                    raise TooLarge(f"the server at {url} answered with more than {limit} bytes (the daemon's "
                                   "limit for this request)", url)
            return response.status_code, bytes(body)
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def client_for(model: Model) -> Client:
    key = (id(asyncio.get_running_loop()), model.connect_timeout, model.read_timeout, _plain(model),
           uses_environment_proxy(model.base_url))
    client = _clients.get(key)
    if client is None or client.is_closed:
        client = _clients[key] = Client(model, 8)
    return client


def fresh_client(model: Model) -> Client:
    """A client of its own that keeps no connection: for the one request it is used for."""
    return Client(model, 0)


async def read_error_body(response: httpx.Response) -> bytes:
    """An error answer's body, up to ``ERROR_BODY_LIMIT`` bytes: it is read for the provider's
    message, and a body that never ends, or a small compressed one that expands enormously,
    must not fill the memory first. The rest is left unread (the answer is closed)."""
    pieces: list[bytes] = []
    size = 0
    body = response.aiter_bytes()
    try:
        async for data in body:
            pieces.append(data)
            size += len(data)
            if size >= ERROR_BODY_LIMIT:
                break
    finally:
        await body.aclose()  # type: ignore[attr-defined]  # an async generator's own method
    return b"".join(pieces)[:ERROR_BODY_LIMIT]


def error_text(status: int, body: bytes) -> str:
    """The provider's own message from an error body, prefixed with the status."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    message = None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            message = error.get("message") or error.get("msg")
            if not message and isinstance(error.get("error"), str):
                message = error["error"]
        elif isinstance(error, str):
            message = error
        message = message or data.get("message") or data.get("detail")
    return f"{status} {message or text or _reason(status)}"


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def refused(exc: BaseException) -> bool:
    """The server's port was closed (ECONNREFUSED somewhere in the exception chain, for each
    address a name resolved to)."""
    seen: set[int] = set()
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def request_url(exc: BaseException) -> str | None:
    """The URL of the request an httpx error (or :class:`TooLarge`) is about."""
    if isinstance(exc, Unread):
        return exc.url
    try:
        return str(exc.request.url) if isinstance(exc, httpx.RequestError) else None
    except RuntimeError:  # raised outside a request
        return None


def transport_error_text(exc: Exception) -> str:
    url = request_url(exc)
    if isinstance(exc, httpx.ConnectError) and refused(exc):
        proxy = proxy_for(url) if url else None
        if proxy:
            return f"connection refused by the proxy {proxy} (from the environment) on the way to {url}: " \
                   "is the proxy running?"
        return f"connection refused by {url or 'the server'}: is the server running?"
    if isinstance(exc, httpx.ConnectTimeout):
        return f"connection timed out ({str(exc) or 'connect timeout'})"
    if isinstance(exc, httpx.ReadTimeout):
        return "the provider stopped sending (idle read timeout)"
    if isinstance(exc, httpx.WriteTimeout):
        return "the provider stopped taking the request (write timeout)"
    if isinstance(exc, httpx.ConnectError):
        return f"connection to {url} failed: {exc}" if url else f"connection failed: {exc}"
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return f"connection lost mid-stream: {str(exc) or 'read error'}"
    return f"{type(exc).__name__}: {exc}"


class _Bounded(httpx.AsyncByteStream):
    """An answer's bytes (uncompressed: :meth:`Client.open` refuses others), checked as they
    arrive: more than ``limit`` in all, a line over :data:`MAX_LINE_BYTES` or an event over
    :data:`MAX_EVENT_BYTES` is :class:`TooLarge`, before the decoder has to hold it. A byte
    order mark opening the stream is dropped, as the SSE specification says."""

    def __init__(self, stream: httpx.AsyncByteStream, url: str, limit: int) -> None:
        self.stream = stream
        self.url = url
        self.limit = limit

    def _too_large(self, what: str) -> TooLarge:
        return TooLarge(f"the server at {self.url} sent {what}", self.url)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        total = line = event = 0
        tail = b""  # the end of the last piece: a blank line may be split between two
        first = True
        async for data in self.stream:
            total += len(data)
            if total > self.limit:
                raise self._too_large(f"an answer of more than {self.limit} bytes (maxAnswerBytes in "
                                      "models.json; the daemon stopped reading it)")
            if first and data:
                data, first = data.removeprefix(_BOM), False
            end = max(data.rfind(b"\n"), data.rfind(b"\r"))
            line = line + len(data) if end < 0 else len(data) - end - 1
            if line > MAX_LINE_BYTES:
                raise self._too_large(f"a line of its event stream longer than {MAX_LINE_BYTES >> 20} MiB "
                                      "(the daemon's limit)")
            joined = tail + data
            blank = max(joined.rfind(b"\n\n"), joined.rfind(b"\r\r"), joined.rfind(b"\n\r\n"))
            event = event + len(data) if blank < 0 else len(joined) - blank - 2
            if event > MAX_EVENT_BYTES:
                raise self._too_large(f"an event of more than {MAX_EVENT_BYTES >> 20} MiB (the daemon's limit)")
            tail = joined[-3:]
            yield data

    async def aclose(self) -> None:
        await self.stream.aclose()


async def _read_events(response: httpx.Response, put: Callable[[ServerSentEvent], bool],
                       room: Callable[[], Awaitable[None]], limit: int) -> None:
    """``put`` each event of ``response``, decoded by httpx-sse, waiting for ``room`` when it
    says the consumer is behind (the socket is then not read). The bytes are decoded as
    UTF-8, which is what SSE is, whatever charset the header names."""
    assert isinstance(response.stream, httpx.AsyncByteStream)
    response.stream = _Bounded(response.stream, str(response.url), limit)
    response.encoding = "utf-8"
    async for event in EventSource(response).aiter_sse():
        if put(event):
            await room()


async def sse_stream(
    model: Model, url: str, headers: dict[str, str], body: dict[str, Any], cancel: CancelToken
) -> AsyncIterator[ServerSentEvent]:
    """The events of a streamed answer; raises ProviderHTTPError, transport errors, Cancelled, or
    CredentialRefused before anything is sent when a header carries a key ``url`` may not get."""
    check_request(url, headers)
    items: deque[ServerSentEvent | BaseException | object] = deque()  # object: _END
    wake: list[asyncio.Future[None]] = []
    space: list[asyncio.Future[None]] = []  # the reader waits here while the consumer is behind
    untaken = [0]  # characters of the events in ``items``
    client = client_for(model)
    request_headers = {"accept": "text/event-stream", "content-type": "application/json",
                       **{name.lower(): value for name, value in headers.items()}}

    def behind() -> bool:
        return len(items) > MAX_UNTAKEN[0] or untaken[0] > MAX_UNTAKEN[1]

    def put(item: ServerSentEvent | BaseException | object) -> bool:
        """Hand ``item`` to the consumer; True when it is behind (the reader waits for ``room``)."""
        items.append(item)
        if isinstance(item, ServerSentEvent):
            untaken[0] += len(item.data)
        if wake and not wake[0].done():
            wake[0].set_result(None)
        return behind()

    answered = False

    async def exchange(through: Client) -> None:
        nonlocal answered
        response = await through.open(url, request_headers, encode_json(body))
        try:
            answered = True
            if response.status_code >= 300:
                raw = await read_error_body(response)
                text = error_text(response.status_code, raw)
                detail = classify(response.status_code, text)
                detail.retry_after_s = parse_retry_after(response.headers)
                raise ProviderHTTPError(text, detail)
            await _read_events(response, put, room, model.max_answer_bytes)
        finally:
            await response.aclose()

    async def read() -> None:
        try:
            try:
                await exchange(client)
            except _DEAD_BEFORE_ANSWER:
                if answered:
                    raise
                async with fresh_client(model) as fresh:  # a new connection, whatever the pool holds
                    await exchange(fresh)
            put(_END)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(exc)

    async def room() -> None:
        while behind():
            space[:] = [asyncio.get_running_loop().create_future()]
            await space[0]

    reader = asyncio.ensure_future(read())

    def stop_reading() -> None:
        # Once only: a second cancel would interrupt the transport while it closes the connection.
        if not reader.done() and not reader.cancelling():
            reader.cancel()

    def on_cancel() -> None:
        stop_reading()  # closes the connection now
        items.clear()
        untaken[0] = 0
        put(Cancelled("aborted"))

    remove = cancel.on_cancel(on_cancel)
    loop = asyncio.get_running_loop()
    try:
        while True:
            if not items:
                wake[:] = [loop.create_future()]
                await wake[0]
                continue
            item = items.popleft()
            if isinstance(item, ServerSentEvent):
                untaken[0] -= len(item.data)
                if space and not space[0].done() and len(items) <= MAX_UNTAKEN[0] // 2 \
                        and untaken[0] <= MAX_UNTAKEN[1] // 2:
                    space[0].set_result(None)
                yield item
                continue
            if item is _END:
                return
            assert isinstance(item, BaseException)
            raise item
    finally:
        remove()
        stop_reading()
        try:
            await reader
        except BaseException:  # noqa: BLE001 - it was cancelled, or already reported
            pass


def failure(exc: BaseException) -> tuple[str, ProviderErrorDetail]:
    """Error text and detail for anything a provider stream raised."""
    if isinstance(exc, ProviderHTTPError):
        return str(exc), exc.detail
    if isinstance(exc, Unread):  # the server would send the same again: not retried
        return str(exc), ProviderErrorDetail(retryable=False)
    if isinstance(exc, httpx.TransportError):
        text = transport_error_text(exc)
        # Nothing listens on a local port (the server's, or the proxy's on the way to it): waiting will
        # not start it, so say it now.
        url = request_url(exc)
        local = url is not None and (is_loopback(url) or is_loopback(proxy_for(url) or ""))
        return text, ProviderErrorDetail(retryable=not (local and refused(exc)))
    if isinstance(exc, json.JSONDecodeError):
        return f"the provider sent invalid JSON in its stream: {exc}", ProviderErrorDetail()
    text = f"{type(exc).__name__}: {exc}"
    return text, classify(None, text)

