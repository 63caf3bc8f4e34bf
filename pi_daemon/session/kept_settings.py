"""Per-session settings kept in the session file: queue modes, auto-retry, auto-compaction, the mode.

Each change is a ``session_settings`` side entry holding the changed group whole
(``queueModes``, ``autoRetry``, ``autoCompaction``, ``mode``); on load the last value of each
group wins. Values of the wrong type are ignored, so a hand-edited file cannot break a load.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ..agent.queues import QUEUE_MODES
from ..guard.modes import MODES
from ..converter import camel
from ..json_types import JsonValue

if TYPE_CHECKING:
    from .agent_session import AgentSession

ENTRY = "session_settings"


def restore(session: "AgentSession") -> None:
    """Queue modes, auto-retry and auto-compaction as the session's file last set them."""
    for entry in session.store.of_type(ENTRY):
        modes = entry.get("queueModes")
        if isinstance(modes, dict):
            session.agent.set_queue_modes(*(m if m in QUEUE_MODES else None
                                            for m in (modes.get("steering"), modes.get("followUp"))))
        if entry.get("mode") in MODES:
            session.apply_mode(entry["mode"])
        session.retry = merged(session.retry, entry.get("autoRetry"))
        session.compaction = merged(session.compaction, entry.get("autoCompaction"))


def merged(settings: Any, stored: Any) -> Any:
    """``settings`` with the stored values that have the right type and are not negative."""
    if not isinstance(stored, dict):
        return settings
    values = {}
    for field in attrs.fields(type(settings)):
        value: JsonValue = stored.get(camel(field.name))  # checked against the field's type below
        if type(value) is type(getattr(settings, field.name)) and (type(value) is bool or value >= 0):
            values[field.name] = value
    return attrs.evolve(settings, **values)
