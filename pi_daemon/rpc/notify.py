"""``agent/event`` notifications: one sender per session, gap-free ``seq``, and coalescing.

``seq`` counts the events of one session for the life of the daemon process: the counter
lives in the daemon (``counters``), so closing and loading the session again goes on
where it was; ``session/load`` answers the seq the next event will carry. Events re-sent
for a replay are numbered in the same sequence and carry ``replay: true``.

While the client is backlogged (the writer holds more than ``COALESCE_ABOVE`` unsent
bytes), adjacent deltas of the same content block are merged into one ``message_update``
before they are numbered: the concatenated text is identical, the client simply gets
fewer, larger deltas. A held delta goes out with the next other event, or after
``HOLD_S`` at the latest. Every event, a merged one too, waits while the client is over the
writer's high-water mark: the run (and the model's stream behind it) is held back, not
buffered.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from ..converter import to_wire
from ..events import MessageUpdate, Replayed, TextDeltaEvent, ThinkingDeltaEvent, ToolcallDeltaEvent
from ..wire.framing import dumps
from ..wire.transport import FrameWriter
from .types import AGENT_EVENT

COALESCE_ABOVE = 16 * 1024
HOLD_S = 0.02
MERGEABLE = (TextDeltaEvent, ThinkingDeltaEvent, ToolcallDeltaEvent)


class EventSender:
    def __init__(self, session_id: str, writer: FrameWriter, send_frame: Callable[[bytes], None],
                 counters: dict[str, int] | None = None) -> None:
        self.session_id = session_id
        self.writer = writer
        self.send_frame = send_frame
        self.counters = counters if counters is not None else {}  # session id -> last seq sent
        self._held: dict[str, Any] | None = None  # wire form of a merged message_update
        self._parts: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    @property
    def seq(self) -> int:
        return self.counters.get(self.session_id, 0)

    def _send(self, wire_event: dict[str, Any], replay: bool = False) -> None:
        seq = self.counters[self.session_id] = self.seq + 1
        params: dict[str, Any] = {"sessionId": self.session_id, "seq": seq, "event": wire_event}
        if replay:
            params["replay"] = True
        self.send_frame(dumps({"jsonrpc": "2.0", "method": AGENT_EVENT.name, "params": params}))

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            held["assistantMessageEvent"]["delta"] = "".join(self._parts)
            self._parts = []
            self._send(held)

    def _hold(self, event: MessageUpdate) -> bool:
        """Merge ``event`` into the held update; False when it cannot be merged."""
        delta = event.assistant_message_event
        if not isinstance(delta, MERGEABLE) or self.writer.backlog <= COALESCE_ABOVE:
            return False
        held = self._held
        if held is not None:
            inner = held["assistantMessageEvent"]
            if inner["type"] == delta.type and inner["contentIndex"] == delta.content_index:
                self._parts.append(delta.delta)
                if event.usage is not None:
                    held["usage"] = to_wire(event.usage)
                return True
            self.flush()
        self._held = to_wire(event)
        self._parts = [delta.delta]
        self._timer = asyncio.get_running_loop().call_later(HOLD_S, self.flush)
        return True

    async def __call__(self, event: Any) -> None:
        if isinstance(event, MessageUpdate) and self._hold(event):
            await self.writer.drain()  # merged, yet the run waits while the client reads nothing
            return
        self.flush()
        if isinstance(event, Replayed):
            self._send(to_wire(event.event), replay=True)
        else:
            self._send(to_wire(event))
        await self.writer.drain()
