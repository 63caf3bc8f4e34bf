"""Writes what happens in a session to its file, before any observer hears of it.

Every ``message_end`` becomes a ``message`` entry, whose id the event then carries (prompts, steering and follow-ups when
delivered, assistant messages including aborted and failed ones, tool results); model,
thinking-level and name changes become their entries; a subagent's end becomes a ``subagent``
entry (its usage counts in the session's totals). A queued message is written as
``queue_add`` when accepted; its ``message`` entry names the ``queueId`` when it is
delivered, in the same line, so a crash can neither lose nor repeat it; ``queue_done``
marks one that was cleared.
"""

from __future__ import annotations

from typing import Any

from ..converter import to_wire
from ..events import (
    AgentSettled, MessageEnd, MessageUpdate, ModelChanged, SessionInfoChanged, SubagentEnd, ThinkingLevelChanged,
)
from .store import SessionStore


class SessionRecorder:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._queued: dict[int, tuple[Any, str]] = {}  # id(message) -> (message, queue id)

    def __call__(self, event: Any) -> None:
        if type(event) is MessageUpdate or self.store.closed:
            return  # deltas are news, not facts: only the final message is written
        if isinstance(event, MessageEnd):
            fields: dict[str, Any] = {"message": to_wire(event.message)}
            queued = self._queued.pop(id(event.message), None)
            if queued is not None and queued[0] is event.message:
                fields["queueId"] = queued[1]
            event.entry_id = self.store.append("message", **fields)["id"]
        elif isinstance(event, ModelChanged):
            self.store.append("model_change", provider=event.provider, modelId=event.model_id)
        elif isinstance(event, ThinkingLevelChanged):
            self.store.append("thinking_level_change", thinkingLevel=event.level)
        elif isinstance(event, SessionInfoChanged):
            self.store.append("session_info", name=event.name)
        elif isinstance(event, SubagentEnd):
            fields = {"usage": to_wire(event.usage)} if event.usage is not None else {}
            self.store.append("subagent", toolCallId=event.tool_call_id, sessionId=event.session_id,
                              status=event.status, **fields)
        elif isinstance(event, AgentSettled):
            self.store.sync()

    def queued(self, kind: str, message: Any, queue_id: str) -> None:
        self.store.append("queue_add", queueId=queue_id, kind=kind, message=to_wire(message))
        self._queued[id(message)] = (message, queue_id)
        self.store.sync()

    def restored(self, message: Any, queue_id: str) -> None:
        self._queued[id(message)] = (message, queue_id)

    def cleared(self, queue_ids: list[str]) -> None:
        for queue_id in queue_ids:
            self.store.append("queue_done", queueId=queue_id, reason="cleared")
        self._queued = {k: v for k, v in self._queued.items() if v[1] not in queue_ids}
        if queue_ids:
            self.store.sync()
