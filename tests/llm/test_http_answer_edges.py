"""The providers' HTTP client against servers that answer oddly: bytes past the end of an
answer, compressed bodies, aborts mid-answer, endless error bodies, refusals on every address
of a name, proxies. Real servers on 127.0.0.1 write the exact bytes."""

from __future__ import annotations

import asyncio
import os
import socket
import ssl

import httpx
import pytest
import trustme

from pi_daemon.cancel import CancelToken, Cancelled
from pi_daemon.llm import http as llm_http
from pi_daemon.llm.http import sse_stream
from test_http import Origin, client, openai_model, read_request


def answers_each_request_with(raw: bytes):  # type: ignore[no-untyped-def]
    async def handler(_: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(raw)
            await writer.drain()

    return handler


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
                                        (b"HTTP/1.1 200 OK\r\nconnection: close\r\n", False)])
async def test_http10_and_connection_close_answers(head: bytes, kept: bool) -> None:
    raw = head + b"content-length: 3\r\n\r\nabc"
    async with Origin(answers_each_request_with(raw)) as origin, client() as http:
        for _ in range(2):
            assert (await http.post(origin.url, content=b"x")).content == b"abc"
        assert origin.connections == (1 if kept else 2)


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
async def test_many_aborts_mid_answer_and_before_it_leave_no_task_or_socket_and_no_answer_behind() -> None:
    """An abort while the head is awaited or while the body streams closes that connection at
    once; the next request never reads the aborted answer's bytes."""
    closed = 0
    arrived = asyncio.Queue()  # type: ignore[var-annotated]

    async def slow(n: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal closed
        line, _ = await read_request(reader)
        arrived.put_nowait(line)
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
            else:  # aborted while the head is awaited: once the server has the request
                waiting = asyncio.ensure_future(anext(source))
                await asyncio.wait_for(arrived.get(), 10)
                token.cancel()
                with pytest.raises(Cancelled):
                    await waiting
                await source.aclose()
                continue
            await arrived.get()
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
    with pytest.raises(httpx.ConnectError) as caught:
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
    assert b"host: [::1]:%d\r\n" % port in rest.lower()


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
        async with client(https=True) as http:
            assert (await http.post(origin.url, b"x")).content == b"ok"  # https://localhost:<port>
            with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                await http.post(origin.url.replace("localhost", "127.0.0.1"), b"x")  # not the certificate's name
    assert names[0] == "localhost"


async def test_a_host_name_idna_cannot_encode_is_an_invalid_url() -> None:
    async with client() as http:
        with pytest.raises(httpx.InvalidURL, match="Invalid IDNA hostname"):
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
        assert events == ["direct"]


