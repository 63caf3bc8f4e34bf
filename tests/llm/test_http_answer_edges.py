"""Http11Transport against servers that answer oddly: bytes past the end of an answer, heads
too large to keep, compressed bodies that expand enormously. Real servers on 127.0.0.1 write
the exact bytes."""

from __future__ import annotations

import asyncio
import gzip

import pytest

from pi_daemon.llm import transport_errors as errors
from pi_daemon.llm.http_transport import MAX_HEAD_SIZE
from test_http_transport import Origin, client, read_request


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
