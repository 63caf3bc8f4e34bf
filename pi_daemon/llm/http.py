"""HTTP for providers: one shared client per model setting, SSE streams that an abort closes at once.

:func:`sse_stream` POSTs a JSON body and yields the server-sent events of the answer.
A non-2xx answer raises :class:`ProviderHTTPError` carrying the provider's own error
message and ``Retry-After``. The HTTP read runs in its own task so that cancelling
closes the connection immediately, whatever the provider code is waiting for.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import json
import os
import ssl
from collections import deque
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable
from urllib.parse import urlsplit

import orjson

from ..cancel import CancelToken, Cancelled
from .credentials import check_request
from .errors import ProviderErrorDetail, classify, parse_retry_after
from .http_transport import DEFAULT_HEADERS, Http11Transport, Response, Timeouts, environment_proxied
from .model import Model
from .sse import EventDecoder, LineDecoder, ServerSentEvent, check_content_type
from .transport_errors import (ConnectError, ConnectTimeout, ReadError, ReadTimeout, RemoteProtocolError,
                               TooLarge, TransportError, WriteError)

if TYPE_CHECKING:
    from .http_proxied import ProxiedClient, ProxiedResponse

_clients: dict[tuple[int, float, float, bool], Client] = {}
_END = object()  # the stream ended normally
# The connection died before the server sent anything back: a kept-alive connection the
# server had already closed (llama-server closes after every answer although it says
# Keep-Alive). The request never reached the model; it is sent again on a new connection.
# Http11Transport does this itself; httpx's transport (behind a proxy) needs it done here.
_DEAD_BEFORE_ANSWER = (RemoteProtocolError, ReadError, WriteError)
ERROR_BODY_LIMIT = 1 << 20
PROBE_BODY_LIMIT = 1 << 20  # a GET's whole body (/props, a model list)
MAX_UNTAKEN = (256, 4 << 20)  # events read but not yet taken (count, characters): past either, the socket waits
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


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
    """What the client verifies TLS with, made when the first ``https`` connection is opened:
    the store ``SSL_CERT_FILE`` or ``SSL_CERT_DIR`` names, else certifi's (as httpx chose).
    Loading the certificate store costs tens of milliseconds; a plain ``http://`` server (a
    local one) never needs it, so its client gets a context that trusts no certificate: it
    cannot speak TLS to anyone (redirects are not followed), and verification stays on."""
    if plain:
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if os.environ.get("SSL_CERT_FILE"):
        return ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    if os.environ.get("SSL_CERT_DIR"):
        return ssl.create_default_context(capath=os.environ["SSL_CERT_DIR"])
    import certifi

    return ssl.create_default_context(cafile=certifi.where())


class Client:
    """The connections of one model's requests: :class:`Http11Transport`, or httpx's client when
    the environment names a proxy (httpx is imported only then)."""

    def __init__(self, model: Model, keep: int) -> None:
        plain = _plain(model)
        self.timeouts = Timeouts(model.connect_timeout, model.read_timeout, model.read_timeout)
        self.direct: Http11Transport | None = None
        self.proxied: ProxiedClient | None = None
        if environment_proxied():
            from .http_proxied import ProxiedClient

            self.proxied = ProxiedClient(model.connect_timeout, model.read_timeout, keep, _tls(plain))
        else:
            self.direct = Http11Transport(functools.partial(_tls, plain), max_idle=keep)

    @property
    def resends_dead_reused(self) -> bool:
        """Its transport sends a request again when a reused connection was dead."""
        return self.direct is not None

    @property
    def is_closed(self) -> bool:
        return self.direct.closed if self.direct is not None else self.proxied is None or self.proxied.is_closed

    async def open(self, url: str, headers: dict[str, str], content: bytes, method: str = "POST",
                   timeout: float | None = None) -> Response | ProxiedResponse:
        """The answer's head, its body to be read and the answer closed by the caller."""
        if self.direct is None:
            assert self.proxied is not None
            return await self.proxied.request(method, url, headers, content, timeout)
        timeouts = self.timeouts if timeout is None else Timeouts(timeout, timeout, timeout)
        return await self.direct.request(method, url, {**DEFAULT_HEADERS, **headers}, content, timeouts)

    async def get(self, url: str, timeout: float | None = None, limit: int = PROBE_BODY_LIMIT) -> tuple[int, bytes]:
        """The status and the whole body of a GET; :class:`TooLarge` past ``limit`` bytes (decoded)."""
        response = await self.open(url, {}, b"", "GET", timeout)
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
        if self.direct is not None:
            await self.direct.aclose()
        elif self.proxied is not None:
            await self.proxied.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def client_for(model: Model) -> Client:
    key = (id(asyncio.get_running_loop()), model.connect_timeout, model.read_timeout, _plain(model))
    client = _clients.get(key)
    if client is None or client.is_closed:
        client = _clients[key] = Client(model, 8)
    return client


def fresh_client(model: Model) -> Client:
    """A client of its own that keeps no connection: for the one request it is used for."""
    return Client(model, 0)


async def read_error_body(response: Response | ProxiedResponse) -> bytes:
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
        await body.aclose()  # type: ignore[attr-defined]
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
    """The server's port was closed (ECONNREFUSED somewhere in the exception chain)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, ConnectionRefusedError):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def request_url(exc: BaseException) -> str | None:
    url = getattr(exc, "url", None)
    return url if isinstance(url, str) else None


def transport_error_text(exc: Exception) -> str:
    if isinstance(exc, ConnectError) and refused(exc):
        return f"connection refused by {request_url(exc) or 'the server'}: is the server running?"
    if isinstance(exc, ConnectTimeout):
        return f"connection timed out ({str(exc) or 'connect timeout'})"
    if isinstance(exc, ReadTimeout):
        return "the provider stopped sending (idle read timeout)"
    if isinstance(exc, ConnectError):
        url = request_url(exc)
        return f"connection to {url} failed: {exc}" if url else f"connection failed: {exc}"
    if isinstance(exc, RemoteProtocolError):
        return f"connection lost mid-stream: {exc}"
    if isinstance(exc, ReadError):
        return f"connection lost mid-stream: {str(exc) or 'read error'}"
    return f"{type(exc).__name__}: {exc}"


async def _read_events(response: Response | ProxiedResponse, put: Callable[[ServerSentEvent], None],
                       room: Callable[[], Awaitable[None]], limit: int) -> None:
    """``put`` each event of ``response``, a received piece of text at a time, waiting for
    ``room`` after each piece (the consumer is behind: the socket is then not read). The bytes
    are decoded as UTF-8, which is what SSE is (whatever charset the header names), by one
    incremental decoder: a character split between two reads is joined, and a byte order mark
    opening the stream is dropped, as the specification says. More than ``limit`` bytes
    (decoded), a line or an event past :mod:`.sse`'s limits, is :class:`TooLarge`."""
    url = str(response.url)
    check_content_type(response.headers.get("content-type", ""), url)
    lines, decoder = LineDecoder(url), EventDecoder(url)
    decode = decoder.decode
    utf8 = codecs.getincrementaldecoder("utf-8-sig")("replace").decode
    total = 0
    async for data in response.aiter_bytes():
        total += len(data)
        if total > limit:
            raise TooLarge(f"the server at {url} sent an answer of more than {limit} bytes (maxAnswerBytes "
                           "in models.json; the daemon stopped reading it)", url)
        await room()
        for line in lines.decode(utf8(data)):
            event = decode(line)
            if event is not None:
                put(event)
    for line in lines.decode(utf8(b"", True)) + lines.flush():
        event = decode(line)
        if event is not None:
            put(event)


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

    def put(item: ServerSentEvent | BaseException | object) -> None:
        items.append(item)
        if isinstance(item, ServerSentEvent):
            untaken[0] += len(item.data)
        if wake and not wake[0].done():
            wake[0].set_result(None)

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
                if answered or client.resends_dead_reused:
                    raise
                async with fresh_client(model) as fresh:  # a new connection, whatever the pool holds
                    await exchange(fresh)
            put(_END)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            put(exc)

    async def room() -> None:
        while len(items) > MAX_UNTAKEN[0] or untaken[0] > MAX_UNTAKEN[1]:
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
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, ServerSentEvent)
            yield item
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
    if isinstance(exc, TooLarge):  # the server would send the same again: not retried
        return str(exc), ProviderErrorDetail(retryable=False)
    if isinstance(exc, TransportError):
        text = transport_error_text(exc)
        # Nothing listens on a local port: waiting will not start the server, so say it now.
        url = request_url(exc)
        local = url is not None and _host(url) in LOCAL_HOSTS
        return text, ProviderErrorDetail(retryable=not (local and refused(exc)))
    if isinstance(exc, json.JSONDecodeError):
        return f"the provider sent invalid JSON in its stream: {exc}", ProviderErrorDetail()
    text = f"{type(exc).__name__}: {exc}"
    return text, classify(None, text)


def _host(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None
