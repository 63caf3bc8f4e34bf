"""A model server on 127.0.0.1 that never stops: each answer is produced without end (or up to
a bound far past the daemon's limits) by a generator of body pieces, sent with chunked
transfer encoding as fast as the client reads. ``sent`` counts the body bytes written, so a
test can see the server held back by a client that stopped reading."""

from __future__ import annotations

import asyncio
import itertools
import json
import zlib
from typing import Callable, Iterator

from loopback import ThreadedServer

Body = Callable[[], Iterator[bytes]]
PIECE = 64 * 1024


def endless_line() -> Iterator[bytes]:
    yield b"data: "
    while True:
        yield b"x" * PIECE


def endless_event() -> Iterator[bytes]:
    line = b"data: " + b"y" * 1000 + b"\n"
    while True:
        yield line * 64


def endless_valid() -> Iterator[bytes]:
    for n in itertools.count():
        chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m",
                 "choices": [{"index": 0, "delta": {"content": f"word{n} " * 50}, "finish_reason": None}]}
        yield (f"data: {json.dumps(chunk)}\n\n" * 20).encode()


def gzip_bomb(decoded: int = 256 << 20, prefix: bytes = b"") -> bytes:
    """A gzip stream of ``prefix`` and then ``decoded`` bytes of one letter (256 MiB pack into
    about 256 KiB)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"z" * (1 << 20)
    out = [packer.compress(prefix)] + [packer.compress(block) for _ in range(decoded // len(block))]
    return b"".join(out) + packer.flush()


def endless_body() -> Iterator[bytes]:
    yield b'{"default_generation_settings": {"n_ctx": 4096}, "pad": "'
    while True:
        yield b"p" * PIECE


class HostileServer(ThreadedServer):
    """``post``: the body of every model request (an event stream); ``get``: of every GET
    (``/props``, ``/v1/models``), JSON; ``gzip`` sends that body compressed (a bomb: the bytes
    given are already gzip)."""

    def __init__(self, post: Body, get: Body | None = None, *, post_gzip: bool = False,
                 get_gzip: bool = False) -> None:
        self.post, self.get = post, get
        self.post_gzip, self.get_gzip = post_gzip, get_gzip
        self.sent = 0
        self.requests: list[str] = []
        super().__init__()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                length = next((int(h.split(":", 1)[1]) for h in head if h.lower().startswith("content-length:")), 0)
                await reader.readexactly(length)
                self.requests.append(f"{method} {path}")
                body, packed, kind = (self.post, self.post_gzip, "text/event-stream") if method == "POST" \
                    else (self.get, self.get_gzip, "application/json")
                if body is None:
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                extra = "content-encoding: gzip\r\n" if packed else ""
                writer.write(f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\n{extra}"
                             "transfer-encoding: chunked\r\n\r\n".encode())
                for piece in body():
                    for at in range(0, len(piece), PIECE):
                        part = piece[at:at + PIECE]
                        writer.write(b"%x\r\n%s\r\n" % (len(part), part))
                        await writer.drain()  # as fast as the client reads, no faster
                        self.sent += len(part)
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


__all__ = ["HostileServer", "endless_body", "endless_event", "endless_line", "endless_valid", "gzip_bomb"]
