"""``agent/event`` notifications: one stream per session, numbered once, sent to every connection holding it.

``seq`` counts the live events of one session for the life of the daemon process: the
counter lives in the hub (``counters``), so closing and loading the session again goes on
where it was; ``session/load`` answers the seq the next live event will carry. Every
connection holding the session gets the same event with the same ``seq``. Events re-sent
for a replay are not counted: they carry the seq of the last live event before them and
``replay: true``.

The stream keeps the events it sent (a bounded buffer, :data:`KEEP_EVENTS` /
:data:`KEEP_BYTES`), so a client that comes back with ``session/load{fromSeq}`` gets exactly
the ones it missed (:meth:`SessionStream.since`).

While a holder is backlogged (its writer holds more than ``COALESCE_ABOVE`` unsent bytes),
adjacent deltas of the same content block are merged into one ``message_update`` before
they are numbered, for every holder alike: the concatenated text is identical, the clients
simply get fewer, larger deltas. A held delta goes out with the next other event, or after
``HOLD_S`` at the latest. Every event, a merged one too, waits while a holder is over its
writer's high-water mark: the run (and the model's stream behind it) is held back, not
buffered. With ``stuck_after`` (a server with several clients), a holder over its mark that
long is let go (``on_stuck``), so one client that stopped reading cannot hold the run up.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import Any, Callable, Protocol

from ..converter import to_wire
from ..events import MessageEnd, MessageUpdate, Replayed, TextDeltaEvent, ThinkingDeltaEvent, ToolcallDeltaEvent
from ..wire.framing import dumps
from ..wire.transport import FrameWriter
from .types import AGENT_EVENT

log = logging.getLogger(__name__)

COALESCE_ABOVE = 16 * 1024
HOLD_S = 0.02
MERGEABLE = (TextDeltaEvent, ThinkingDeltaEvent, ToolcallDeltaEvent)
KEEP_EVENTS = 20_000  # sent events a session keeps for a client catching up ...
KEEP_BYTES = 16 * 1024 * 1024  # ... and at most this many bytes of them
STUCK_S = 30.0  # a holder over its high-water mark this long is let go (several clients only)


class Receiver(Protocol):
    """A connection, as a stream sees it."""

    writer: FrameWriter

    def send_frame(self, body: bytes) -> None: ...


class SessionStream:
    """The session's observer: numbers its events and sends each to ``receivers()``."""

    def __init__(self, session_id: str, receivers: Callable[[], list[Receiver]],
                 counters: dict[str, int] | None = None, *, stuck_after: float | None = None,
                 on_stuck: Callable[[Receiver], None] | None = None) -> None:
        self.session_id = session_id
        self.receivers = receivers
        self.counters = counters if counters is not None else {}  # session id -> last seq sent
        self.stuck_after = stuck_after
        self.on_stuck = on_stuck
        self.kept: deque[tuple[int, bytes]] = deque()  # (seq, body) of the events sent, oldest first
        self._kept_bytes = 0
        self.last_end = 0  # the seq of the last message_end (a stored message): the file has it
        self._held: dict[str, Any] | None = None  # wire form of a merged message_update
        self._parts: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    @property
    def seq(self) -> int:
        return self.counters.get(self.session_id, 0)

    def _send(self, wire_event: dict[str, Any]) -> None:
        seq = self.counters[self.session_id] = self.seq + 1
        body = dumps({"jsonrpc": "2.0", "method": AGENT_EVENT.name,
                      "params": {"sessionId": self.session_id, "seq": seq, "event": wire_event}})
        self.kept.append((seq, body))
        self._kept_bytes += len(body)
        while len(self.kept) > KEEP_EVENTS or self._kept_bytes > KEEP_BYTES:
            self._kept_bytes -= len(self.kept.popleft()[1])
        for receiver in self.receivers():
            receiver.send_frame(body)

    def replayed(self, event: Replayed) -> bytes:
        """The frame of a replayed event: not counted, it carries the seq of the last live one."""
        return dumps({"jsonrpc": "2.0", "method": AGENT_EVENT.name,
                      "params": {"sessionId": self.session_id, "seq": self.seq, "event": to_wire(event.event),
                                 "replay": True}})

    def since(self, first: int) -> list[bytes] | None:
        """The kept events with seq >= ``first``; None when some of them are no longer kept."""
        if first > self.seq:
            return []
        if not self.kept or self.kept[0][0] > first:
            return None
        start = first - self.kept[0][0]  # seqs in the buffer have no gaps
        return [body for _, body in list(self.kept)[start:]]

    def forget(self) -> None:
        """The session closed: its kept events go (the counter stays)."""
        self.flush()
        self.kept.clear()
        self._kept_bytes = 0

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            held["assistantMessageEvent"]["delta"] = "".join(self._parts)
            self._parts = []
            self._send(held)

    def _backlogged(self) -> bool:
        return any(r.writer.backlog > COALESCE_ABOVE for r in self.receivers())

    def _hold(self, event: MessageUpdate) -> bool:
        """Merge ``event`` into the held update; False when it cannot be merged."""
        delta = event.assistant_message_event
        if not isinstance(delta, MERGEABLE) or not self._backlogged():
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

    async def drain(self) -> None:
        """Wait while a holder reads nothing; one stuck past ``stuck_after`` is let go."""
        for receiver in self.receivers():
            if receiver.writer.backlog <= receiver.writer.high_water:
                continue  # the common case: no wait, not even a turn of the loop
            if self.stuck_after is None:
                await receiver.writer.drain()
                continue
            try:
                await asyncio.wait_for(receiver.writer.drain(), self.stuck_after)
            except TimeoutError:
                log.warning("a client read nothing of session %s for %g s: disconnected", self.session_id,
                            self.stuck_after)
                if self.on_stuck is not None:
                    self.on_stuck(receiver)

    async def __call__(self, event: Any) -> None:
        if isinstance(event, MessageUpdate) and self._hold(event):
            await self.drain()  # merged, yet the run waits while a client reads nothing
            return
        self.flush()
        if isinstance(event, Replayed):  # a replay is sent to the connection that asked for it only
            return
        self._send(to_wire(event))
        if isinstance(event, MessageEnd):
            self.last_end = self.seq
        await self.drain()
