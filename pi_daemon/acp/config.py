"""A session's ACP modes, configuration options and usage: what the client shows and sets.

Modes: the session's own (:mod:`..tools.modes`: ``ask``, ``plan``, ``auto-edit``), offered both
as ACP modes and as the ``mode`` option (category ``mode``), which the current schema prefers.
Options: ``mode``, ``model`` and ``thought_level`` (selects), and, for a client that takes boolean
options (``clientCapabilities.session.configOptions.boolean``), ``auto_compact``.
Usage (``usage_update``): the context in use, the model's window, and the session's cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..llm.model import THINKING_LEVELS
from ..session.compaction import context_tokens
from ..guard import modes
from ..wire.errors import invalid_params

if TYPE_CHECKING:
    from ..session import AgentSession

MODES = [{"id": mode, "name": mode.replace("-", " ").capitalize(), "description": modes.DESCRIPTIONS[mode]}
         for mode in ("ask", "plan", "auto-edit")]
SELECTS = ("mode", "model", "thought_level")
BOOLEANS = ("auto_compact",)


def options(registry: Any, session: AgentSession, booleans: bool) -> list[dict[str, Any]]:
    """Every option of the session, with its current value."""
    models = [m for m in registry.models() if registry.availability(m)[0]]
    current = session.model
    if current is not None and current not in models:
        models.insert(0, current)
    level = session.agent.state.thinking_level
    found: list[dict[str, Any]] = [
        {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": session.mode,
         "options": [{"value": m["id"], "name": m["name"], "description": m["description"]} for m in MODES]},
        {"id": "model", "name": "Model", "category": "model", "type": "select",
         "currentValue": current.spec if current else "",
         "options": [{"value": m.spec, "name": m.name or m.spec} for m in models]},
        {"id": "thought_level", "name": "Thinking", "category": "thought_level", "type": "select",
         "currentValue": level, "options": [{"value": v, "name": v.capitalize()} for v in THINKING_LEVELS]},
    ]
    if booleans:
        found.append({"id": "auto_compact", "name": "Compact automatically", "type": "boolean",
                      "description": "summarize the oldest messages when the context nears the model's window",
                      "currentValue": session.compaction.enabled})
    return found


def requested_value(params: dict[str, Any], booleans: bool) -> tuple[str, Any]:
    """The option id and value ``session/set_config_option`` asks for, checked against its type."""
    config, value = params.get("configId"), params.get("value")
    known = [*SELECTS, *(BOOLEANS if booleans else ())]
    if config not in known:
        raise invalid_params("params.configId", f"unknown option {config!r} (options: {', '.join(known)})")
    if config in BOOLEANS:
        if params.get("type") != "boolean" or not isinstance(value, bool):
            raise invalid_params("params.value", f"{config} is a boolean option: send type \"boolean\" and "
                                                  "a true or false value")
    elif not isinstance(value, str):
        raise invalid_params("params.value", "expected a string")
    return str(config), value


def usage(session: AgentSession, cost: float) -> dict[str, Any] | None:
    """The ``usage_update`` for the session now; None without a model (no window to measure)."""
    if session.model is None:
        return None
    return {"sessionUpdate": "usage_update", "used": context_tokens(session.messages),
            "size": session.model.context_window, "cost": {"amount": round(cost, 6), "currency": "USD"}}
