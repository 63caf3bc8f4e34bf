"""Framing of JSON-RPC messages on a byte stream: NDJSON or Content-Length headers.

The framing is chosen by the first byte the client sends: ``{`` or ``[`` means
newline-delimited JSON (split on LF only, a CR before it tolerated, never on U+2028 /
U+2029 which are valid inside JSON strings); ``C`` means LSP-style headers (any header
case, CRLF or bare LF line ends). Answers use the same framing.

A frame larger than the limit is skipped and reported as a :class:`FrameError`; the
stream stays in sync and the connection lives on. This module imports nothing heavy: it
runs before the rest of the daemon is loaded.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

NDJSON = "ndjson"
CONTENT_LENGTH = "content-length"

MAX_HEADER_BYTES = 8192


class FrameError:
    """Something in the byte stream that is not a usable frame; ``message`` says what."""

    __slots__ = ("message", "too_large")

    def __init__(self, message: str, too_large: bool = False) -> None:
        self.message = message
        self.too_large = too_large

    def __repr__(self) -> str:
        return f"FrameError({self.message!r})"


def detect(first_byte: int) -> str:
    return CONTENT_LENGTH if first_byte in (ord("C"), ord("c")) else NDJSON


def encode(body: bytes, framing: str | None) -> bytes:
    if framing == CONTENT_LENGTH:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


def dumps(message: Any) -> bytes:
    """Compact UTF-8 JSON; never a raw newline, so it fits both framings."""
    try:
        return orjson.dumps(message)
    except TypeError:  # a lone surrogate or an int beyond 64 bits: escape rather than fail
        return json.dumps(message, separators=(",", ":")).encode("ascii")


def _too_big(size: int | str, limit: int) -> FrameError:
    return FrameError(f"frame of {size} bytes exceeds the limit of {limit} bytes; it was skipped", True)


# A header line that starts a frame: the name, digits and a real line end. Valid JSON can
# never contain one (the letters only inside strings, which cannot hold a raw LF), so
# finding it in a body means the declared length was wrong, and after a bad header it is
# where the stream picks up again.
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*\d{1,20}[ \t]*\r?\n", re.IGNORECASE)
_HEADER_LINE_END = re.compile(rb"content-length[ \t]*:[ \t]*\d{1,20}[ \t]*\r?\Z", re.IGNORECASE)
# The start of a header line cut off by the end of a body whose length was declared a
# little too long: JSON never ends in a letter ``c``, a ``-`` or a colon.
_NAME = b"content-length"
_HEADER_TAIL = re.compile(
    rb"(?:content-length[ \t]*(?::[ \t]*\d{0,20}[ \t]*\r?)?|"
    + b"|".join(re.escape(_NAME[:i]) for i in range(len(_NAME) - 1, 0, -1))
    + rb")\Z", re.IGNORECASE)
_HEADER_START = re.compile(rb"[A-Za-z0-9-]{1,64}[ \t]*(?::|\Z)")
_LOOKBEHIND = 64  # bytes of a header line that can precede its LF


class FrameDecoder:
    """Feed bytes in, get complete frames (``bytes``) and :class:`FrameError`\\ s out."""

    def __init__(self, max_frame_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.framing: str | None = None
        self._buf = bytearray()
        self._scan = 0  # where the search for the next delimiter resumes
        self._discard = 0  # Content-Length: body bytes still to drop
        self._discarding_line = False  # NDJSON: dropping an oversize line up to its LF
        self._need: int | None = None  # Content-Length: body length being read
        self._declared = 0  # Content-Length: the length the header of that body declared
        self._resync = False  # Content-Length: skipping to the next header line
        self._pos = 0  # Content-Length: start of the unconsumed bytes while decoding

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        out: list[bytes | FrameError] = []
        if self.framing is None:
            stripped = data.lstrip()
            if not stripped:
                return out
            self.framing = detect(stripped[0])
        self._buf += data
        if self.framing == NDJSON:
            self._lines(out)
        else:
            self._headers(out)
        return out

    def _lines(self, out: list[bytes | FrameError]) -> None:
        buf, limit = self._buf, self.max_frame_bytes
        start = 0
        while True:
            nl = buf.find(b"\n", max(start, self._scan))
            if nl < 0:
                pending = len(buf) - start
                if self._discarding_line:
                    start = len(buf)
                elif pending > limit:
                    out.append(_too_big(pending, limit))
                    self._discarding_line = True
                    start = len(buf)
                break
            if self._discarding_line:
                self._discarding_line = False
            else:
                end = nl - 1 if nl > start and buf[nl - 1] == 0x0D else nl
                if end - start > limit:
                    out.append(_too_big(end - start, limit))
                elif buf[start:end].strip():
                    out.append(bytes(buf[start:end]))
            start = nl + 1
            self._scan = start
        del buf[:start]
        self._scan = len(buf)

    def _headers(self, out: list[bytes | FrameError]) -> None:
        # Positions are offsets into ``buf``; consumed bytes are dropped once, at the end.
        self._pos = 0
        try:
            self._frames(out)
        finally:
            del self._buf[: self._pos]
            self._pos = 0

    def _frames(self, out: list[bytes | FrameError]) -> None:
        buf = self._buf
        while self._pos < len(buf) or self._need == 0:
            pos = self._pos
            if self._resync:
                match = _HEADER_LINE.search(buf, pos)
                if match is None:
                    self._pos = max(pos, len(buf) - _LOOKBEHIND)
                    return
                self._pos = match.start()
                self._resync = False
                continue
            if self._need is not None or self._discard:
                if not self._body(out):
                    return
                continue
            if buf[pos] in b"\r\n \t":  # stray blank between frames
                self._pos += 1
                continue
            if _HEADER_START.match(buf, pos) is None:
                self._bad(out, "not a header: " + _quote(bytes(buf[pos : pos + 80]).partition(b"\n")[0]))
                continue
            end, after = _header_end(buf, pos, pos + MAX_HEADER_BYTES)
            if end < 0:
                if len(buf) - pos > MAX_HEADER_BYTES:
                    self._bad(out, "header block longer than 8192 bytes")
                    continue
                return
            length = _content_length(bytes(buf[pos:end]))
            if isinstance(length, str):
                self._bad(out, length)
                continue
            self._pos = after
            self._scan = 0
            self._declared = length
            if length > self.max_frame_bytes:
                out.append(_too_big(length, self.max_frame_bytes))
                self._discard = length
            else:
                self._need = length

    def _body(self, out: list[bytes | FrameError]) -> bool:
        """Take (or drop, when oversize) the body being read; False while it is incomplete."""
        buf, pos = self._buf, self._pos
        reading = self._need is not None
        want = self._need if self._need is not None else self._discard
        have = min(want, len(buf) - pos)
        cut = self._next_header(have)
        if cut is None and have == want and want and buf[pos + want - 1] not in b'}]"':
            tail = _HEADER_TAIL.search(buf, pos + max(0, want - _LOOKBEHIND), pos + want)
            cut = tail.start() - pos if tail is not None else None
        if cut is not None:  # the declared length runs into the next frame: take what is before it
            out.append(FrameError(f"Content-Length {self._declared} is longer than the body: a new "
                                  "header began inside it; the stream goes on from that header"))
            if reading and cut:
                out.append(bytes(buf[pos : pos + cut]))
            have = want = cut
        elif not reading and have < want:
            # Drop what was scanned, keeping a tail in which a header line may be starting.
            drop = max(0, have - _LOOKBEHIND)
            self._pos += drop
            self._discard -= drop
            self._scan = have - drop
            return False
        elif have < want:
            self._scan = have
            return False
        elif reading:
            out.append(bytes(buf[pos : pos + want]))
        self._pos += want
        self._need = None
        self._discard = 0
        self._scan = 0
        return True

    def _next_header(self, end: int) -> int | None:
        """Where a header line starts inside the body's first ``end`` bytes, if it does."""
        buf, base = self._buf, self._pos
        pos = base + self._scan
        while True:
            nl = buf.find(b"\n", pos, base + end)
            if nl < 0:
                return None
            match = _HEADER_LINE_END.search(buf, max(base, nl - _LOOKBEHIND), nl)
            if match is not None:
                return match.start() - base
            pos = nl + 1

    def _bad(self, out: list[bytes | FrameError], problem: str) -> None:
        """An unusable header block: say so once, then skip to the next header line."""
        out.append(FrameError(f"{problem}; skipped to the next Content-Length header"))
        self._pos += 1
        self._resync = True


def _header_end(buf: bytearray, start: int, limit: int) -> tuple[int, int]:
    """``(end of the header lines, start of the body)``, or ``(-1, 0)`` while incomplete."""
    pos = start
    while True:
        nl = buf.find(b"\n", pos, limit)
        if nl < 0:
            return -1, 0
        if nl == pos or (nl == pos + 1 and buf[pos] == 0x0D):  # the empty line
            return pos, nl + 1
        pos = nl + 1


def _content_length(header: bytes) -> int | str:
    """The declared length, or what is wrong with the header block."""
    for line in header.split(b"\n"):
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"content-length":
            value = value.strip()
            if not value.isdigit():
                return f"invalid Content-Length header: {_quote(line)}"
            if len(value) > 20:
                return f"Content-Length of {len(value)} digits"
            return int(value)
    return f"header block without a Content-Length header: {_quote(header)}"


def _quote(raw: bytes) -> str:
    text = repr(raw.strip()[:80])
    return text + "…" if len(raw.strip()) > 80 else text
