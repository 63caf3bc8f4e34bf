"""Reading one provider's SSE answer: events out, and how it ended if not normally.

The providers differ in how they turn a server-sent event into builder events, and in how
a finished stream becomes the final message; an abort and a failed connection end every
one of them the same way, which :class:`SseRun` keeps in one place.
"""

from __future__ import annotations

from typing import AsyncIterator, Callable, Sequence

from ..cancel import Cancelled
from ..events import AssistantMessageEvent
from ..json_types import JsonValue
from .errors import ProviderErrorDetail
from ..json_read import loads
from .http import failure
from httpx_sse import ServerSentEvent
from .stream import ErrorReason


class SseRun:
    def __init__(self) -> None:
        self.failed: tuple[str, ErrorReason, ProviderErrorDetail | None] | None = None  # (text, reason, detail)

    async def events(self, source: AsyncIterator[ServerSentEvent],
                     handle: Callable[[JsonValue], Sequence[AssistantMessageEvent]],
                     finished: Callable[[], bool] = lambda: False) -> AsyncIterator[AssistantMessageEvent]:
        """``handle(data)`` for each non-empty event's JSON data until ``finished()``; an abort or
        a failure ends the iteration and is kept in :attr:`failed`."""

        try:
            async for sse in source:
                data = sse.data.strip()
                if not data or data == "[DONE]":
                    if data:
                        break
                    continue
                for event in handle(loads(data)):
                    yield event
                if finished():
                    break
        except Cancelled:
            self.failed = ("Request was aborted", "aborted", None)
        except Exception as exc:  # noqa: BLE001 - every failure becomes the message's error
            text, detail = failure(exc)
            self.failed = (text, "error", detail)
