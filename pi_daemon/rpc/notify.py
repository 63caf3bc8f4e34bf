"""``agent/event`` notifications: one stream per session, numbered once, sent to every connection holding it.

``seq`` counts the live events of one session for the life of the daemon process: the
counter lives in the hub (``counters``), so closing and loading the session again goes on
where it was; ``session/load`` answers the seq the next live event will carry. Every
connection holding the session gets the same event with the same ``seq``. Events re-sent
for a replay are not counted: they carry the seq of the last live event before them and
``replay: true``.

The stream keeps the events it sent (a bounded buffer, :data:`KEEP_EVENTS` /
:data:`KEEP_BYTES` per session and :data:`KEEP_ALL_BYTES` for all of a daemon's sessions), so a client that comes back with ``session/load{fromSeq}`` gets exactly
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
KEEP_ALL_BYTES = 64 * 1024 * 1024  # what all the sessions of a daemon keep together (see KeptBudget)
STUCK_S = 30.0  # a holder over its high-water mark this long is let go (several clients only)


class Receiver(Protocol):
    """A connection, as a stream sees it."""

    writer: FrameWriter

    def send_frame(self, body: bytes) -> None: ...


class KeptBudget:
    """The bytes the streams of one daemon keep together: over ``limit``, the stream keeping the most
    lets go of its oldest events first (so many open sessions cannot add up to gigabytes)."""

    def __init__(self, limit: int = KEEP_ALL_BYTES) -> None:
        self.limit = limit
        self.total = 0
        self.streams: set[SessionStream] = set()

    def trim(self) -> None:
        while self.total > self.limit:
            largest = max(self.streams, key=lambda stream: stream.kept_bytes, default=None)
            if largest is None or not largest.kept:
                return
            largest.drop_oldest()


class SessionStream:
    """The session's observer: numbers its events and sends each to ``receivers()``."""

    def __init__(self, session_id: str, receivers: Callable[[], list[Receiver]],
                 counters: dict[str, int] | None = None, *, stuck_after: float | None = None,
                 on_stuck: Callable[[Receiver], None] | None = None, budget: KeptBudget | None = None) -> None:
        self.session_id = session_id
        self.receivers = receivers
        self.counters = counters if counters is not None else {}  # session id -> last seq sent
        self.stuck_after = stuck_after
        self.on_stuck = on_stuck
        self.kept: deque[tuple[int, bytes]] = deque()  # (seq, body) of the events sent, oldest first
        self.kept_bytes = 0
        self.budget = budget or KeptBudget()
        self.budget.streams.add(self)
        self.last_end = 0  # the seq of the last message_end (a stored message): the file has it
        self._held: dict[str, Any] | None = None  # wire form of a merged message_update
        self._parts: list[str] = []
        self._timer: asyncio.TimerHandle | None = None

    @property
    def seq(self) -> int:
        return self.counters.get(self.session_id, 0)

    def _send(self, wire_event: dict[str, Any], receivers: list[Receiver] | None = None) -> None:
        seq = self.counters[self.session_id] = self.seq + 1
        # A copy of orjson's result, which holds a spare buffer of some KiB: kept as it is, 20,000 small
        # events would take 80 MB instead of the few the bytes count says.
        body = bytes(memoryview(dumps({"jsonrpc": "2.0", "method": AGENT_EVENT.name,
                                       "params": {"sessionId": self.session_id, "seq": seq, "event": wire_event}})))
        self.kept.append((seq, body))
        self.kept_bytes += len(body)
        self.budget.total += len(body)
        while len(self.kept) > KEEP_EVENTS or self.kept_bytes > KEEP_BYTES:
            self.drop_oldest()
        self.budget.trim()
        for receiver in self.receivers() if receivers is None else receivers:
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

    def drop_oldest(self) -> None:
        size = len(self.kept.popleft()[1])
        self.kept_bytes -= size
        self.budget.total -= size

    def forget(self) -> None:
        """The session closed: its kept events go (the counter stays)."""
        self.flush()
        self.budget.total -= self.kept_bytes
        self.budget.streams.discard(self)
        self.kept.clear()
        self.kept_bytes = 0

    def flush(self, receivers: list[Receiver] | None = None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            held["assistantMessageEvent"]["delta"] = "".join(self._parts)
            self._parts = []
            self._send(held, receivers)

    def _hold(self, event: MessageUpdate, receivers: list[Receiver]) -> bool:
        """Merge ``event`` into the held update; False when it cannot be merged."""
        delta = event.assistant_message_event
        if not isinstance(delta, MERGEABLE):
            return False
        for receiver in receivers:
            if receiver.writer.backlog > COALESCE_ABOVE:
                break
        else:
            return False
        held = self._held
        if held is not None:
            inner = held["assistantMessageEvent"]
            if inner["type"] == delta.type and inner["contentIndex"] == delta.content_index:
                self._parts.append(delta.delta)
                if event.usage is not None:
                    held["usage"] = to_wire(event.usage)
                return True
            self.flush(receivers)
        self._held = to_wire(event)
        self._parts = [delta.delta]
        self._timer = asyncio.get_running_loop().call_later(HOLD_S, self.flush)
        return True

    async def drain(self, receivers: list[Receiver]) -> None:
        """Wait while a holder reads nothing; one stuck past ``stuck_after`` is let go."""
        for receiver in receivers:
            if receiver.writer.backlog <= receiver.writer.high_water:
                continue
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
        # One look at the holders per event (no await until the end, so they cannot change meanwhile).
        receivers = self.receivers()
        if type(event) is MessageUpdate and self._hold(event, receivers):
            pass  # merged; yet the run waits below while a client reads nothing
        else:
            self.flush(receivers)
            if isinstance(event, Replayed):  # a replay is sent to the connection that asked for it only
                return
            self._send(to_wire(event), receivers)
            if isinstance(event, MessageEnd):
                self.last_end = self.seq
        for receiver in receivers:  # the common case waits for nothing: not even a coroutine is made then
            if receiver.writer.backlog > receiver.writer.high_water:
                await self.drain(receivers)
                return
