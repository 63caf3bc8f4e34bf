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

NDJSON = "ndjson"
CONTENT_LENGTH = "content-length"

MAX_HEADER_BYTES = 8192


class FrameError:
    """Something in the byte stream that is not a usable frame; ``message`` says what."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def __repr__(self) -> str:
        return f"FrameError({self.message!r})"


def detect(first_byte: int) -> str:
    return CONTENT_LENGTH if first_byte in (ord("C"), ord("c")) else NDJSON


def encode(body: bytes, framing: str | None) -> bytes:
    if framing == CONTENT_LENGTH:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body
    return body + b"\n"


def _too_big(size: int, limit: int) -> FrameError:
    return FrameError(f"frame of {size} bytes exceeds the limit of {limit} bytes; it was skipped")


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

    def _lines(self, out: list) -> None:
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

    def _headers(self, out: list) -> None:
        buf = self._buf
        while buf or self._need == 0:
            if self._discard:
                dropped = min(self._discard, len(buf))
                del buf[:dropped]
                self._discard -= dropped
                continue
            if self._need is not None:
                if len(buf) < self._need:
                    return
                out.append(bytes(buf[: self._need]))
                del buf[: self._need]
                self._need = None
                continue
            if buf[:1] in (b"\r", b"\n", b" ", b"\t"):  # stray blank between frames
                del buf[:1]
                continue
            end, sep = _header_end(buf)
            if end < 0:
                if len(buf) > MAX_HEADER_BYTES:
                    out.append(FrameError("header block longer than 8192 bytes; input dropped"))
                    buf.clear()
                return
            header = bytes(buf[:end])
            del buf[: end + sep]
            length = _content_length(header)
            if isinstance(length, FrameError):
                out.append(length)
            elif length > self.max_frame_bytes:
                out.append(_too_big(length, self.max_frame_bytes))
                self._discard = length
            else:
                self._need = length


def _header_end(buf: bytearray) -> tuple[int, int]:
    crlf = buf.find(b"\r\n\r\n")
    lf = buf.find(b"\n\n")
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, 4
    if lf >= 0:
        return lf, 2
    return -1, 0


def _content_length(header: bytes) -> int | FrameError:
    for line in header.split(b"\n"):
        name, colon, value = line.partition(b":")
        if colon and name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return FrameError(f"invalid Content-Length header: {line.strip()!r}")
            if length < 0:
                return FrameError("negative Content-Length")
            return length
    return FrameError("header block without a Content-Length header")
