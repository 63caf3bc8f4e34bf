"""Http11Transport against servers that answer oddly: bytes past the end of an answer, heads
too large to keep, compressed bodies that expand enormously. Real servers on 127.0.0.1 write
the exact bytes."""

from __future__ import annotations

import asyncio
import gzip
import os
import socket
import ssl

import pytest
import trustme

from pi_daemon.cancel import CancelToken, Cancelled
from pi_daemon.llm import http as llm_http
from pi_daemon.llm import transport_errors as errors
from pi_daemon.llm.http import client_for, sse_stream
from pi_daemon.llm.http_transport import MAX_HEAD_SIZE, Http11Transport
from test_http_transport import Client, Origin, client, openai_model, read_request


def answers_each_request_with(raw: bytes):  # type: ignore[no-untyped-def]
    async def handler(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(raw)
            await writer.drain()

    return handler


async def test_bytes_past_the_end_of_an_answer_are_not_read_as_its_body_nor_its_head() -> None:
    # Content-Length counted short (characters, not bytes), then a second answer nobody asked for.
    raw = (b"HTTP/1.1 200 OK\r\ncontent-length: 3\r\nx-first: 1\r\n\r\nabcdef"
           b"HTTP/1.1 500 Oops\r\ncontent-length: 3\r\nx-second: 1\r\n\r\nzzz")
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        for _ in range(2):
            response = await http.post(origin.url, content=b"x")
            assert (response.status_code, response.content) == (200, b"abc")
            assert "x-second" not in response.headers
        assert origin.connections == 2  # a connection with bytes nobody asked for is not kept


async def test_head_larger_than_the_limit_is_an_error() -> None:
    raw = b"HTTP/1.1 200 OK\r\n" + b"x-big: %s\r\n" % (b"a" * 1000) * (2 * MAX_HEAD_SIZE // 1000) + b"content-length: 0\r\n\r\n"
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        with pytest.raises(errors.RemoteProtocolError, match="head is larger"):
            await http.post(origin.url, content=b"x")


async def test_chunk_extensions_and_trailers_are_not_part_of_the_body_and_the_connection_is_kept() -> None:
    raw = (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
           b"3;name=value\r\nabc\r\n2\r\nde\r\n0\r\nx-trailer: 1\r\n\r\n")
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        for _ in range(2):
            response = await http.post(origin.url, content=b"x")
            assert response.content == b"abcde"
            assert "x-trailer" not in response.headers
        assert origin.connections == 1


@pytest.mark.parametrize("head, kept", [(b"HTTP/1.0 200 OK\r\n", False),
                                        (b"HTTP/1.0 200 OK\r\nconnection: keep-alive\r\n", True),
                                        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n", False)])
async def test_http10_and_connection_close_answers(head: bytes, kept: bool) -> None:
    raw = head + b"content-length: 3\r\n\r\nabc"
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        for _ in range(2):
            assert (await http.post(origin.url, content=b"x")).content == b"abc"
        assert origin.connections == (1 if kept else 2)


@pytest.mark.parametrize("encoding", [b"gzip", b"gzip, gzip"])
async def test_compressed_answer_expanding_enormously_arrives_in_bounded_pieces(encoding: bytes) -> None:
    size = 64 << 20
    body = gzip.compress(b"\0" * size)
    if encoding == b"gzip, gzip":
        body = gzip.compress(body)
    raw = b"HTTP/1.1 200 OK\r\ncontent-encoding: %s\r\ncontent-length: %d\r\n\r\n%s" % (encoding, len(body), body)
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        async with http.stream("POST", origin.url, b"x") as response:
            pieces = [len(piece) async for piece in response.aiter_bytes()]
    assert sum(pieces) == size
    assert max(pieces) <= 1 << 20


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_many_aborts_mid_answer_and_before_it_leave_no_task_or_socket_and_no_answer_behind() -> None:
    """An abort while the head is awaited or while the body streams closes that connection at
    once; the next request never reads the aborted answer's bytes."""
    closed = 0

    async def slow(n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal closed
        line, _ = await read_request(reader)
        if b"head" not in line:
            event = b"data: answer%03d\n\n" % n
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                         b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
        await reader.read()  # nothing more is sent; the client's close ends this
        closed += 1

    async with Origin(slow) as origin:
        m = openai_model(origin.url)
        before_tasks, before_fds = len(asyncio.all_tasks()), open_descriptors()
        for n in range(1, 41):
            token = CancelToken()
            path = "/head" if n % 2 else "/body"
            source = sse_stream(m, origin.url + path, {}, {"stream": True}, token)
            if path == "/body":
                first = await anext(source)
                assert first.data == "answer%03d" % n  # its own answer, never an earlier one's
                token.cancel()
            else:
                asyncio.get_running_loop().call_later(0.01, token.cancel)
            with pytest.raises(Cancelled):
                await anext(source)
            await source.aclose()
        for _ in range(100):
            if closed == 40:
                break
            await asyncio.sleep(0.01)
        assert closed == 40 and origin.connections == 40
        assert len(asyncio.all_tasks()) == before_tasks
        assert open_descriptors() <= before_fds


async def test_error_answer_body_is_read_only_up_to_the_limit() -> None:
    async def endless_error(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b'HTTP/1.1 500 Oops\r\ntransfer-encoding: chunked\r\n\r\n13\r\n{"error":"overload"\r\n')
        while True:  # a body that never ends
            writer.write(b"10000\r\n%s\r\n" % (b" " * 0x10000))
            await writer.drain()

    async with Origin(endless_error) as origin:
        source = sse_stream(openai_model(origin.url), origin.url + "/v1/chat/completions", {}, {}, CancelToken())
        with pytest.raises(llm_http.ProviderHTTPError) as caught:
            await asyncio.wait_for(anext(source), 10)
    assert str(caught.value).startswith('500 {"error":"overload"')


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


@pytest.fixture
async def localhost_on_both_loopbacks(monkeypatch: pytest.MonkeyPatch) -> None:
    """``localhost`` resolves to ``::1`` and ``127.0.0.1``, as on most systems (this one's hosts file
    may name one only); the connections made are real."""
    if not has_ipv6_loopback():
        pytest.skip("no IPv6 loopback")
    loop = asyncio.get_running_loop()
    resolve = loop.getaddrinfo

    async def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if host == "localhost":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0)),
                    (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return await resolve(host, port, *args, **kwargs)

    monkeypatch.setattr(loop, "getaddrinfo", getaddrinfo)


async def test_refused_on_each_address_of_localhost_is_a_refusal_not_retried(localhost_on_both_loopbacks) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    url = f"http://localhost:{port}/v1/chat/completions"
    source = sse_stream(openai_model(f"http://localhost:{port}"), url, {}, {}, CancelToken())
    with pytest.raises(errors.ConnectError) as caught:
        await anext(source)
    text, detail = llm_http.failure(caught.value)
    assert text == f"connection refused by {url}: is the server running?"
    assert not detail.retryable


async def test_localhost_server_on_ipv4_only_is_reached(localhost_on_both_loopbacks) -> None:
    async with Origin(answers_each_request_with(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")) as origin, \
            client() as http:
        assert (await http.post(origin.url.replace("127.0.0.1", "localhost"), b"x")).content == b"ok"


@pytest.mark.skipif(not has_ipv6_loopback(), reason="no IPv6 loopback")
async def test_ipv6_literal_host_with_port_path_and_query() -> None:
    heads: list[bytes] = []

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handler, "::1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with client() as http:
            response = await http.get(f"http://[::1]:{port}/v1/models?a=1&b=x y#frag")
    finally:
        server.close()
    assert response.content == b"ok"
    line, _, rest = heads[0].partition(b"\r\n")
    assert line == b"GET /v1/models?a=1&b=x%20y HTTP/1.1"
    assert b"host: [::1]:%d\r\n" % port in rest


@pytest.mark.parametrize("cut", [True, False])
async def test_compressed_answer_delimited_by_the_close_and_cut_short_is_an_error(cut: bool) -> None:
    body = gzip.compress(b"data: hello\n\n" * 1000)

    async def close_delimited(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-encoding: gzip\r\n\r\n" + (body[:len(body) // 2] if cut else body))
        await writer.drain()

    async with Origin(close_delimited) as origin, client() as http:
        if cut:
            with pytest.raises(errors.DecodingError, match="closed before the end"):
                await http.post(origin.url, b"x")
        else:
            assert (await http.post(origin.url, b"x")).content == b"data: hello\n\n" * 1000


async def test_https_sends_the_name_and_verifies_it_against_the_certificate(tmp_path, monkeypatch) -> None:
    """The TLS context a provider's https client makes (SSL_CERT_FILE naming the authority):
    SNI carries the URL's host name, and a certificate for another name is refused."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    names: list[str | None] = []
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_tls)
    server_tls.sni_callback = lambda _conn, name, _context: names.append(name)  # type: ignore[assignment,misc,func-returns-value]
    async with Origin(answers_each_request_with(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"), server_tls) as origin:
        transport = Http11Transport(lambda: llm_http._tls(False))
        async with Client(transport, 5.0) as http:
            assert (await http.post(origin.url, b"x")).content == b"ok"  # https://localhost:<port>
            with pytest.raises(errors.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.post(origin.url.replace("localhost", "127.0.0.1"), b"x")  # not the certificate's name
    assert names[0] == "localhost"


@pytest.mark.parametrize("error, text", [(errors.ConnectTimeout(""), "connection timed out (connect timeout)"),
                                         (errors.ReadError(""), "connection lost mid-stream: read error")])
def test_an_error_without_a_text_of_its_own_is_named(error: errors.TransportError, text: str) -> None:
    assert llm_http.transport_error_text(error) == text  # httpx's timeouts had no text: not "()"


async def test_connection_idle_longer_than_the_expiry_is_closed_not_used_again() -> None:
    """A connection a middlebox dropped silently would swallow the request until the read timeout."""
    closed_by_client = asyncio.Event()

    async def handler(n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\n%d" % n)
        await writer.drain()
        if n == 1:
            await reader.read()
            closed_by_client.set()
        else:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nr")

    async with Origin(handler) as origin, Client(Http11Transport(ssl.create_default_context, 8, 0.2), 5.0) as http:
        assert (await http.post(origin.url, b"x")).content == b"1"
        await asyncio.sleep(0.3)
        assert (await http.post(origin.url, b"x")).content == b"2"
        assert (await http.post(origin.url, b"x")).content == b"r"  # within the expiry: kept
        await asyncio.wait_for(closed_by_client.wait(), 5)


@pytest.mark.parametrize("raw, kept", [
    (b"HTTP/1.1 200 OK\ncontent-length: 3\n\nabc", True),
    (b"HTTP/1.1 200 OK\r\ncontent-length: 99\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", False)])
async def test_answers_httpx_read_are_read(raw: bytes, kept: bool) -> None:
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        for _ in range(2):
            assert (await http.post(origin.url, b"x")).content == b"abc"
        assert origin.connections == (1 if kept else 2)


async def test_a_host_or_framing_header_given_by_the_provider_is_sent_once() -> None:
    heads: list[bytes] = []

    async def handler(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        heads.append(head)
        await reader.readexactly(4)
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()

    async with Origin(handler) as origin, client() as http:
        response = await http.transport.request("POST", origin.url + "/v1", {"Host": "models.example", "content-length": "1"},
                                                b"body", http.timeouts)
        assert await response.aread() == b"ok"
    fields = [line.lower() for line in heads[0].split(b"\r\n")[1:] if line]
    assert fields == [b"host: models.example", b"content-length: 4"]


async def test_a_host_name_idna_cannot_encode_is_an_invalid_url() -> None:
    async with client() as http:
        with pytest.raises(errors.UnsupportedProtocol, match="invalid host"):
            await http.post("http://" + "é" * 70 + ".test/v1", b"x")  # a label longer than 63


@pytest.mark.parametrize("proxy_variable, no_proxy_variable", [("http_proxy", "NO_PROXY"), ("HTTP_PROXY", "no_proxy"),
                                                               ("all_proxy", "no_proxy")])
async def test_no_proxy_in_either_case_sends_a_local_server_direct(monkeypatch, proxy_variable: str,
                                                                    no_proxy_variable: str) -> None:
    """A proxy named (in either case) with the local server in NO_PROXY: the request goes to the
    server, not to the proxy (a closed port here)."""
    monkeypatch.setattr(llm_http, "_clients", {})
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy", "http_proxy",
                 "HTTP_PROXY"):
        monkeypatch.delenv(name, raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    monkeypatch.setenv(proxy_variable, f"http://127.0.0.1:{closed}")
    monkeypatch.setenv(no_proxy_variable, "127.0.0.1,localhost")
    body = b"data: direct\n\n"
    raw = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    async with Origin(answers_each_request_with(raw)) as origin:
        m = openai_model(origin.url)
        events = [e.data async for e in sse_stream(m, origin.url + "/v1/chat/completions", {}, {}, CancelToken())]
        assert events == ["direct"] and client_for(m).proxied is not None


async def test_an_answer_sent_before_the_request_was_read_whole_is_reported_not_the_write_error() -> None:
    async def too_large(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the body is never read: the close resets the connection
        body = b'{"error":{"message":"request too large"}}'
        writer.write(b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
                     % (len(body), body))
        await writer.drain()

    async with Origin(too_large) as origin:
        source = sse_stream(openai_model(origin.url), origin.url + "/v1/chat/completions", {},
                            {"messages": "x" * 30_000_000}, CancelToken())
        with pytest.raises(llm_http.ProviderHTTPError) as caught:
            await anext(source)
    assert str(caught.value) == "413 request too large"
