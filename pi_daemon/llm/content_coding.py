"""Content codings of an answer's body: ``gzip`` and ``deflate``, undone a bounded piece at a time."""

from __future__ import annotations

import zlib
from typing import Iterable, Iterator

ENCODINGS = ("gzip", "x-gzip", "deflate")  # identity and anything unknown are passed on as they are
DECODED_PIECE = 1 << 20


class Decoder:
    """Undoes one ``Content-Encoding``: ``gzip``, or ``deflate`` zlib-wrapped as the RFC says
    or raw as some servers send it (httpx's decoders did the same)."""

    __slots__ = ("zlib", "raw_fallback", "started")

    def __init__(self, encoding: str) -> None:
        self.raw_fallback = encoding == "deflate"
        self.started = False
        self.zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if encoding != "deflate" else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> Iterator[bytes]:
        """``data`` undone, at most ``DECODED_PIECE`` bytes at a time: a few kilobytes of
        compressed zeros expand a thousandfold, and stacked encodings multiply that."""
        self.started = self.started or bool(data)
        if self.raw_fallback:
            self.raw_fallback = False
            try:
                piece = self.zlib.decompress(data, DECODED_PIECE)
            except zlib.error:
                self.zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                piece = self.zlib.decompress(data, DECODED_PIECE)
        else:
            piece = self.zlib.decompress(data, DECODED_PIECE)
        yield piece
        while self.zlib.unconsumed_tail:
            yield self.zlib.decompress(self.zlib.unconsumed_tail, DECODED_PIECE)

    def through(self, pieces: Iterable[bytes], last: bool) -> Iterator[bytes]:
        for data in pieces:
            yield from self.decode(data)
        if last:  # what the decoder still holds goes through the decoders after it
            yield self.zlib.flush()

    def cut_short(self) -> bool:
        """Data came but the compressed stream did not end."""
        return self.started and not self.zlib.eof

