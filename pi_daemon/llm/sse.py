"""Server-sent events: the answer format of every streaming provider.

Decoded as the WHATWG specification says, with the same results as httpx_sse (which
tests/llm/test_sse_events.py compares against): lines end at CR, LF or CRLF, a blank line
ends an event, ``id`` is kept across events and ignored when it holds a NUL, a ``retry``
that is not a number is ignored, comments and unknown fields are skipped. One difference: a
byte order mark opening the stream is dropped (the UTF-8 decoding of :mod:`.http` does it), as
the specification says; httpx_sse read it as part of the first field's name.
"""

from __future__ import annotations

from .transport_errors import SSEError, TooLarge

MAX_LINE_CHARS = 8 << 20  # one line of the stream
MAX_EVENT_CHARS = 16 << 20  # the data of one event (its lines together)


class ServerSentEvent:
    __slots__ = ("event", "data", "id", "retry")

    def __init__(self, event: str = "", data: str = "", id: str = "", retry: int | None = None) -> None:
        self.event = event or "message"
        self.data = data
        self.id = id
        self.retry = retry

    def __repr__(self) -> str:
        return f"ServerSentEvent(event={self.event!r}, data={self.data!r}, id={self.id!r}, retry={self.retry!r})"


def check_content_type(content_type: str, url: str | None) -> None:
    """Raise :class:`SSEError` unless the answer's ``Content-Type`` is an event stream."""
    media = content_type.partition(";")[0]
    if "text/event-stream" not in media:
        raise SSEError(f"Expected response header Content-Type to contain 'text/event-stream', got {media!r}", url)


def _split(text: str) -> list[str]:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if text[-1] == "\n":
        lines.pop()
    return lines


class LineDecoder:
    """Whole lines out of text that arrives in pieces; a CR at the end of a piece waits for a LF."""

    __slots__ = ("buffer", "buffered", "trailing_cr", "url")

    def __init__(self, url: str | None = None) -> None:
        self.buffer: list[str] = []
        self.buffered = 0  # characters in ``buffer``: a line that never ends is an error at MAX_LINE_CHARS
        self.trailing_cr = False
        self.url = url

    def decode(self, text: str) -> list[str]:
        if self.trailing_cr:
            text = "\r" + text
            self.trailing_cr = False
        if text.endswith("\r"):
            self.trailing_cr = True
            text = text[:-1]
        if not text:
            return []
        ended = text[-1] in "\n\r"
        lines = _split(text)
        if len(lines) == 1 and not ended:
            self._keep(lines[0])
            return []
        if self.buffer:
            lines[0] = "".join(self.buffer) + lines[0]
            self.buffer, self.buffered = [], 0
        if not ended:
            self._keep(lines.pop())
        if any(len(line) > MAX_LINE_CHARS for line in lines):
            raise TooLarge(f"the server at {self.url} sent a line of its event stream longer than "
                           f"{MAX_LINE_CHARS >> 20} MiB characters (the daemon's limit)", self.url)
        return lines

    def _keep(self, part: str) -> None:
        self.buffer.append(part)
        self.buffered += len(part)
        if self.buffered > MAX_LINE_CHARS:
            raise TooLarge(f"the server at {self.url} sent a line of its event stream longer than "
                           f"{MAX_LINE_CHARS >> 20} MiB characters (the daemon's limit)", self.url)

    def flush(self) -> list[str]:
        if not self.buffer and not self.trailing_cr:
            return []
        lines = ["".join(self.buffer)]
        self.buffer, self.buffered = [], 0
        self.trailing_cr = False
        return lines


class EventDecoder:
    """Events out of lines: one is returned at each blank line that ends a non-empty event."""

    __slots__ = ("event", "data", "size", "last_id", "retry", "url")

    def __init__(self, url: str | None = None) -> None:
        self.event = ""
        self.data: list[str] = []
        self.size = 0  # characters in ``data``: an event that never ends is an error at MAX_EVENT_CHARS
        self.last_id = ""  # kept across events, as the specification says
        self.retry: int | None = None
        self.url = url

    def decode(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self.event and not self.data and not self.last_id and self.retry is None:
                return None
            sse = ServerSentEvent(self.event, "\n".join(self.data), self.last_id, self.retry)
            self.event, self.data, self.size, self.retry = "", [], 0, None
            return sse
        if line[0] == ":":
            return None
        field, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            self.data.append(value)
            self.size += len(value) + 1
            if self.size > MAX_EVENT_CHARS:
                raise TooLarge(f"the server at {self.url} sent an event of more than {MAX_EVENT_CHARS >> 20} MiB "
                               "characters without ending it (the daemon's limit)", self.url)
        elif field == "event":
            self.event = value
        elif field == "id":
            if "\0" not in value:
                self.last_id = value
        elif field == "retry":
            try:
                self.retry = int(value)
            except ValueError:
                pass
        return None
