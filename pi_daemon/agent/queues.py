"""Queues decide when new input takes effect: steering and follow-up messages.

A queue hands out one message at a time (``one-at-a-time``) or everything it holds
(``all``). A message taken from a queue is *in flight* until the loop has delivered it
(its ``message_end``); when a run stops before that, it goes back to the front of its
queue, so queued input is never lost.
"""

from __future__ import annotations

import uuid
from collections import deque
from typing import Any, Iterator, Literal

import attrs

from ..messages import user_text

QueueMode = Literal["one-at-a-time", "all"]
QUEUE_MODES: tuple[str, ...] = ("one-at-a-time", "all")
QueueKind = Literal["steer", "followUp"]


def new_queue_id() -> str:
    return "q_" + uuid.uuid4().hex[:12]


@attrs.define
class QueuedMessage:
    kind: QueueKind
    message: Any
    id: str = attrs.field(factory=new_queue_id)

    @property
    def text(self) -> str:
        return user_text(self.message)


class MessageQueue:
    def __init__(self, kind: QueueKind, mode: QueueMode = "one-at-a-time") -> None:
        self.kind = kind
        self.mode: QueueMode = mode
        self._items: deque[QueuedMessage] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[QueuedMessage]:
        return iter(self._items)

    def push(self, message: Any, queue_id: str | None = None) -> QueuedMessage:
        item = QueuedMessage(self.kind, message, queue_id or new_queue_id())
        self._items.append(item)
        return item

    def drain(self) -> list[QueuedMessage]:
        if not self._items:
            return []
        if self.mode == "all":
            taken = list(self._items)
            self._items.clear()
            return taken
        return [self._items.popleft()]

    def restore(self, items: list[QueuedMessage]) -> None:
        """Put in-flight items back at the front, in their original order."""
        for item in reversed(items):
            self._items.appendleft(item)

    def remove(self, queue_id: str) -> QueuedMessage | None:
        for item in self._items:
            if item.id == queue_id:
                self._items.remove(item)
                return item
        return None

    def clear(self) -> list[QueuedMessage]:
        taken = list(self._items)
        self._items.clear()
        return taken

    def texts(self) -> list[str]:
        return [item.text for item in self._items]
