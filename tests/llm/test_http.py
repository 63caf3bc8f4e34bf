"""The providers' HTTP client (httpx, with httpx-sse for event streams) against real servers on
127.0.0.1: plain asyncio servers started in each test (the exact bytes on the wire are the
test's), TLS with a trustme authority, and a provider's stream end to end. What is checked is
what a user relies on: kept-alive connections, llama-server's hang-ups, refusals and timeouts
named, certificates verified, the proxy of the environment used."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import socket
import ssl
import struct
from contextlib import asynccontextmanager
from typing import AsyncIterator, Awaitable, Callable, NamedTuple

import httpx

import pytest
import trustme

from loopback import openai_text
from pi_daemon.cancel import CancelToken
from pi_daemon.llm import http as llm_http
from pi_daemon.llm.http import sse_stream
from pi_daemon.llm.model import Context, Model, StreamOptions
from pi_daemon.llm.stream import stream
from pi_daemon.messages import UserMessage

Handler = Callable[[int, asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Origin:
    """An HTTP server whose ``handler(connection number, reader, writer)`` writes raw bytes."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler, self.tls, self.connections = handler, tls, 0

    async def __aenter__(self) -> Origin:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        self.url = f"{'https' if self.tls else 'http'}://{'localhost' if self.tls else '127.0.0.1'}:{self.port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            await self.handler(self.connections, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()


async def read_request(reader: asyncio.StreamReader) -> tuple[bytes, bytes]:
    """The request line and the body (by Content-Length)."""
    head = await reader.readuntil(b"\r\n\r\n")
    line, _, rest = head.partition(b"\r\n")
    length = 0
    for header in rest.split(b"\r\n"):
        if header.lower().startswith(b"content-length:"):
            length = int(header.split(b":", 1)[1])
    return line, await reader.readexactly(length)


def answer(body: bytes, *headers: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n%s\r\n%s" % (len(body), b"".join(h + b"\r\n" for h in headers), body)


class Answer(NamedTuple):
    status_code: int
    headers: dict[str, str]
    content: bytes


class Client:
    """Requests through the providers' client (:class:`pi_daemon.llm.http.Client`), each read to its end."""

    def __init__(self, timeout: float, https: bool = False, keep: int = 8) -> None:
        model = Model(id="t", provider="local", api="openai-completions",
                      base_url="https://localhost" if https else "http://127.0.0.1",
                      connect_timeout=timeout, read_timeout=timeout)
        self.http = llm_http.Client(model, keep)

    async def post(self, url: str, content: bytes = b"", method: str = "POST") -> Answer:
        async with self.stream(method, url, content) as response:
            return Answer(response.status_code, dict(response.headers), await response.aread())

    async def get(self, url: str) -> Answer:
        return await self.post(url, b"", "GET")

    @asynccontextmanager
    async def stream(self, method: str, url: str, content: bytes = b"") -> AsyncIterator[httpx.Response]:
        response = await self.http.open(url, {}, content, method)
        try:
            yield response
        finally:
            await response.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()


def client(timeout: float = 5.0, https: bool = False) -> Client:
    return Client(timeout, https)


async def keep_answering(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        line, body = await read_request(reader)
        writer.write(answer(line + b"|" + body))
        await writer.drain()


async def test_kept_alive_connection_is_reused_for_the_next_requests() -> None:
    async with Origin(keep_answering) as origin, client() as http:
        for n in range(3):
            response = await http.post(origin.url + f"/v1/x?n={n}", content=b"body%d" % n)
            assert response.status_code == 200
            assert response.content == b"POST /v1/x?n=%d HTTP/1.1|body%d" % (n, n)
        assert origin.connections == 1


async def test_chunked_answer_cut_inside_chunks_arrives_whole() -> None:
    payload = b"".join(b"data: {\"n\": %d}\n\n" % n for n in range(200))

    async def chunked(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        wire = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        wire += b"".join(b"%x\r\n%s\r\n" % (len(payload[i:i + 37]), payload[i:i + 37]) for i in range(0, len(payload), 37))
        wire += b"0\r\n\r\n"
        for i in range(0, len(wire), 101):  # the wire cut across chunk sizes and CRLFs
            writer.write(wire[i:i + 101])
            await writer.drain()
            await asyncio.sleep(0)
        await keep_answering(0, reader, writer)

    async with Origin(chunked) as origin, client() as http:
        response = await http.post(origin.url, content=b"{}")
        assert response.content == payload
        assert (await http.post(origin.url, content=b"2")).content.endswith(b"|2")  # same connection after
        assert origin.connections == 1


async def test_close_delimited_answer_is_read_to_the_close_and_not_reused() -> None:
    async def until_close(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nno length, ")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"ends with the close")

    async with Origin(until_close) as origin, client() as http:
        for _ in range(2):
            response = await http.get(origin.url)
            assert response.content == b"no length, ends with the close"
        assert origin.connections == 2


async def test_no_content_answer_keeps_the_connection() -> None:
    received: list[bytes] = []

    async def no_content(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            received.append((await read_request(reader))[1])
            writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
            await writer.drain()

    async with Origin(no_content) as origin, client() as http:
        for _ in range(2):
            response = await http.post(origin.url, content=b"abcd")
            assert response.status_code == 204 and response.content == b""
        assert received == [b"abcd"] * 2 and origin.connections == 1


async def test_request_head_names_the_daemon_and_quotes_the_url() -> None:
    heads: list[bytes] = []

    async def record(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        writer.write(answer(b"ok"))
        await writer.drain()

    async with Origin(record) as origin:
        m = openai_model(origin.url)
        assert await llm_http.client_for(m).get(origin.url + "/props?a=b c", timeout=1) == (200, b"ok")
    line, *fields = heads[0].rstrip(b"\r\n").split(b"\r\n")
    assert line == b"GET /props?a=b%20c HTTP/1.1"
    sent = dict(f.lower().split(b": ", 1) for f in fields)
    assert sent[b"host"] == b"127.0.0.1:%d" % origin.port and sent[b"user-agent"] == b"pi-daemon/0.1.0"


async def test_informational_answer_before_the_real_one_is_skipped() -> None:
    async def early_hints(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            _, body = await read_request(reader)
            writer.write(b"HTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n" + answer(body, b"x-real: 1"))
            await writer.drain()

    async with Origin(early_hints) as origin, client() as http:
        for n in range(2):
            response = await http.post(origin.url, content=b"%d" % n)
            assert (response.status_code, response.content, response.headers.get("link")) == (200, b"%d" % n, None)
            assert response.headers["x-real"] == "1"
        assert origin.connections == 1


async def test_large_bodies_both_ways() -> None:
    sent = bytes(range(256)) * 40_000  # about 10 MB

    async def digest(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _, body = await read_request(reader)
        writer.write(answer(hashlib.sha256(body).hexdigest().encode() + body[::-1]))
        await writer.drain()

    async with Origin(digest) as origin, client() as http:
        response = await http.post(origin.url, content=sent)
        assert response.content[:64] == hashlib.sha256(sent).hexdigest().encode()
        assert response.content[64:] == sent[::-1]


async def test_reused_connection_closed_by_the_server_is_sent_again_on_a_new_one() -> None:
    """llama-server answers, says nothing of closing, then closes the connection when the next
    request comes: that request never reached the model and is sent again."""
    async def one_answer_then_hang_up(n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        body = b"data: answer%d\n\n" % n
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()
        await read_request(reader)  # the next request arrives; the connection is closed unanswered

    async with Origin(one_answer_then_hang_up) as origin:
        m = openai_model(origin.url)
        for expected in ("answer1", "answer2"):
            source = sse_stream(m, origin.url + "/v1/chat/completions", {}, {}, CancelToken())
            assert [e.data async for e in source] == [expected]
        assert origin.connections == 2


async def test_reused_connection_seen_closed_while_idle_is_not_used() -> None:
    async def answer_and_close(n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _, body = await read_request(reader)
        writer.write(answer(b"%d:%s" % (n, body)))

    async with Origin(answer_and_close) as origin, client() as http:
        assert (await http.post(origin.url, content=b"a")).content == b"1:a"
        await asyncio.sleep(0.05)  # the close has arrived
        assert (await http.post(origin.url, content=b"b")).content == b"2:b"


async def test_a_server_that_always_hangs_up_unanswered_is_an_error_after_one_more_try() -> None:
    async def hang_up(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    async with Origin(hang_up) as origin:
        source = sse_stream(openai_model(origin.url), origin.url + "/v1/chat/completions", {}, {}, CancelToken())
        with pytest.raises(httpx.RemoteProtocolError, match="without sending a response"):
            await anext(source)
        assert origin.connections == 2


async def test_answer_cut_short_is_a_protocol_error() -> None:
    async def short(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly this")

    async with Origin(short) as origin, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
            await http.post(origin.url, content=b"x")


async def test_connection_reset_mid_body_is_a_read_error() -> None:
    async def reset(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\npart")
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()  # closed with a reset

    async with Origin(reset) as origin, client() as http:
        async with http.stream("POST", origin.url, content=b"x") as response:
            with pytest.raises(httpx.ReadError) as caught:
                await response.aread()
    assert llm_http.transport_error_text(caught.value).startswith("connection lost mid-stream")


@pytest.mark.parametrize("encoding", [b"gzip", b"deflate", b"gzip, gzip", b"br"])
async def test_answers_are_asked_uncompressed_and_a_compressed_one_is_refused_unread(encoding: bytes) -> None:
    """A compressed piece is decoded whole by httpx: a small one could expand to gigabytes before
    any limit could count it. Model answers are small text, so they are asked uncompressed."""
    heads: list[bytes] = []

    async def compressing(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        body = gzip.compress(b"data: {}\n\n" * 100)
        writer.write(answer(body, b"content-type: text/event-stream", b"content-encoding: " + encoding))
        await writer.drain()
        await reader.read()

    async with Origin(compressing) as origin:
        m = openai_model(origin.url)
        source = sse_stream(m, origin.url + "/v1/chat/completions", {}, {}, CancelToken())
        with pytest.raises(llm_http.Compressed) as caught:
            await anext(source)
    text, detail = llm_http.failure(caught.value)
    assert text == (f"the server at {origin.url}/v1/chat/completions compressed its answer (content-encoding: "
                    f"{encoding.decode()}) although the daemon asked for it uncompressed; it was not read")
    assert not detail.retryable and origin.connections == 1
    assert b"accept-encoding: identity" in heads[0].lower()


async def test_malformed_answer_is_a_protocol_error() -> None:
    async def garbage(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 abc nonsense\r\n\r\n")
        await reader.read()

    async with Origin(garbage) as origin, client() as http:
        with pytest.raises(httpx.RemoteProtocolError, match="illegal status line"):
            await http.post(origin.url, content=b"x")


async def test_refused_connection_is_a_connect_error_naming_the_refusal() -> None:
    async with Origin(keep_answering) as origin:
        url = origin.url
    async with client() as http:
        with pytest.raises(httpx.ConnectError) as caught:
            await http.post(url, content=b"x")
    assert llm_http.refused(caught.value)
    assert "connection refused" in llm_http.transport_error_text(caught.value)


async def test_silent_server_is_a_read_timeout() -> None:
    async def silent(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()

    async with Origin(silent) as origin, client(timeout=0.2) as http:
        started = asyncio.get_running_loop().time()
        with pytest.raises(httpx.ReadTimeout):
            await http.post(origin.url, content=b"x")
        assert 0.15 < asyncio.get_running_loop().time() - started < 2


async def test_full_listen_queue_is_a_connect_timeout() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    held = []
    for _ in range(4):  # fill the accept queue: the kernel then drops further connection attempts
        held.append(socket.socket())
        held[-1].setblocking(False)
        try:
            held[-1].connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
    try:
        async with client(timeout=0.2) as http:
            with pytest.raises(httpx.ConnectTimeout) as caught:
                await http.post(f"http://127.0.0.1:{port}/", content=b"x")
        assert llm_http.transport_error_text(caught.value) == "connection timed out (connect timeout)"  # as with httpx
    finally:
        for sock in held + [listener]:
            sock.close()


async def test_stalled_body_is_a_read_timeout_after_the_head() -> None:
    async def stall(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
        await reader.read()

    async with Origin(stall) as origin, client(timeout=0.2) as http:
        async with http.stream("POST", origin.url, content=b"x") as response:
            assert response.status_code == 200
            with pytest.raises(httpx.ReadTimeout):
                await response.aread()


async def test_unfinished_answer_closed_by_the_client_is_not_reused() -> None:
    async def long(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
            await writer.drain()

    async with Origin(long) as origin, client() as http:
        for _ in range(2):
            async with http.stream("POST", origin.url, content=b"x") as response:
                async for _piece in response.aiter_bytes():
                    break
        assert origin.connections == 2


def certificate_authority() -> tuple[trustme.CA, ssl.SSLContext]:
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server)
    return ca, server


async def test_https_with_the_authority_the_environment_names(tmp_path, monkeypatch) -> None:
    ca, server_tls = certificate_authority()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    async with Origin(keep_answering, server_tls) as origin, client(https=True) as http:
        for n in range(2):
            assert (await http.post(origin.url, content=b"%d" % n)).content.endswith(b"|%d" % n)
        assert origin.connections == 1


async def test_https_to_an_untrusted_certificate_is_a_connect_error() -> None:
    _, server_tls = certificate_authority()
    async with Origin(keep_answering, server_tls) as origin, client(https=True) as http:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.post(origin.url, content=b"x")


def openai_model(url: str) -> Model:
    return Model(id="gpt-test", provider="local", api="openai-completions", base_url=url + "/v1")


async def test_a_plain_http_provider_client_cannot_be_led_to_tls() -> None:
    """A plain ``http://`` provider's client trusts no certificate (it never loads the store):
    a redirect or a proxy to ``https://`` cannot carry its key anywhere."""
    ca, server_tls = certificate_authority()
    async with Origin(keep_answering, server_tls) as origin, client() as http:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await http.post(origin.url, content=b"x")


async def test_an_https_provider_streams_over_one_verified_connection(tmp_path, monkeypatch) -> None:
    ca, server_tls = certificate_authority()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # the store the environment names
    monkeypatch.setattr(llm_http, "_clients", {})

    async def provider(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            body = openai_text("over tls")
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                         % (len(body), body))
            await writer.drain()

    async with Origin(provider, server_tls) as origin:
        m = openai_model(origin.url)
        for _ in range(2):
            events = [e async for e in stream(m, Context(messages=[UserMessage(content="hi")]),
                                              StreamOptions(api_key="k"), CancelToken())]
            assert events[-1].message.text() == "over tls"
        assert origin.connections == 1


async def test_provider_stream_end_to_end_events_arrive_as_sent() -> None:
    """Each event reaches the provider before the server sends the next: nothing is buffered."""
    received = asyncio.Event()
    sent_second = asyncio.Event()

    async def stepwise(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        first = 'data: {"t":"Hé"}\n\ndata: [DONE]\n\n'.encode()
        cut = first.index("é".encode()) + 1  # the two-byte character arrives in two reads
        for piece in (first[:cut], first[cut:]):
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.01)
        await asyncio.wait_for(received.wait(), 5)
        sent_second.set()
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        await reader.read()

    async with Origin(stepwise) as origin:
        m = openai_model(origin.url)
        source = sse_stream(m, origin.url + "/v1/chat/completions", {}, {"stream": True}, CancelToken())
        data = []
        async for event in source:
            data.append(event.data)
            if event.data == "[DONE]":
                assert not sent_second.is_set()
                received.set()
        assert sent_second.is_set()
        assert data == ['{"t":"Hé"}', "[DONE]"]


async def test_the_proxy_the_environment_names_is_used(monkeypatch) -> None:
    seen: list[bytes] = []

    async def proxy(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line, _body = await read_request(reader)
        seen.append(line)
        body = openai_text("via proxy")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()

    monkeypatch.setattr(llm_http, "_clients", {})
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with Origin(proxy) as origin:
        monkeypatch.setenv("HTTP_PROXY", origin.url)
        m = openai_model("http://model.invalid")
        events = [e async for e in stream(m, Context(messages=[UserMessage(content="hi")]),
                                          StreamOptions(api_key="k"), CancelToken())]
        assert events[-1].message.text() == "via proxy"
        assert seen == [b"POST http://model.invalid/v1/chat/completions HTTP/1.1"]


async def test_header_value_with_a_line_break_is_refused_before_sending() -> None:
    received = bytearray()
    done = asyncio.Event()

    async def record(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        received.extend(await reader.read())
        done.set()

    async with Origin(record) as origin:
        async with client() as http:
            with pytest.raises(httpx.LocalProtocolError, match="Illegal header"):
                await http.http.open(origin.url, {"x-key": "a\r\nx-other: b"}, b"")
        if origin.connections:
            await asyncio.wait_for(done.wait(), 5)
        assert bytes(received) == b""  # not a byte of the request went out


async def test_a_refused_proxy_is_named_and_a_refused_server_is_the_servers(monkeypatch) -> None:
    async with Origin(keep_answering) as closed:
        url = closed.url  # nothing listens there once the block ends
    monkeypatch.setattr(llm_http, "_clients", {})
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    texts = []
    for proxy in (None, url):
        if proxy:
            monkeypatch.setenv("HTTP_PROXY", proxy)
            llm_http._clients.clear()  # the client is chosen when made
        m = openai_model(url if proxy is None else "http://model.invalid")
        events = [e async for e in stream(m, Context(messages=[UserMessage(content="hi")]),
                                          StreamOptions(api_key="k"), CancelToken())]
        texts.append(events[-1].error.error_message)  # type: ignore[union-attr]
    assert texts == [f"connection refused by {url}/v1/chat/completions: is the server running?",
                     f"connection refused by the proxy {url} (from the environment) on the way to "
                     "http://model.invalid/v1/chat/completions: is the proxy running?"]


def test_retry_after_as_an_http_date_or_seconds() -> None:
    import email.utils
    import time

    from pi_daemon.llm.errors import parse_retry_after

    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": later}) <= 31  # type: ignore[operator]
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None


@pytest.mark.parametrize("charset", [b"", b"; charset=latin-1"])
async def test_an_event_stream_is_utf8_and_a_byte_order_mark_opening_it_is_dropped(charset: bytes) -> None:
    """SSE is UTF-8 whatever the header says, and a BOM before the first field is not part of
    its name (the first event would be lost)."""
    body = b"\xef\xbb\xbfdata: caf\xc3\xa9\n\ndata: [DONE]\n\n"

    async def bom(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer(body, b"content-type: text/event-stream" + charset))
        await writer.drain()
        await reader.read()

    async with Origin(bom) as origin:
        source = sse_stream(openai_model(origin.url), origin.url + "/v1/chat/completions", {}, {}, CancelToken())
        assert [e.data async for e in source] == ["café", "[DONE]"]
