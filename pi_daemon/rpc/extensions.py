"""The native face's words for what extends the agent: ACP-style server configs in
``session/new``, and a built-in slash command's outcome (the commands themselves
run in :mod:`pi_daemon.host.commands`, the same for both faces)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..host.commands import BuiltinDone
from ..mcp.config import from_acp
from ..wire.errors import InvalidParams
from . import types as t
from .state import model_info

if TYPE_CHECKING:
    from .context import Context


def mcp_configs(items: list[dict[str, Any]] | None, cwd: str) -> list[Any]:
    try:
        return from_acp(items or [], cwd)
    except ValueError as exc:
        raise InvalidParams(f"invalid params: params.{exc}") from None


def command_outcome(ctx: "Context", done: BuiltinDone) -> t.CommandOutcome:
    """A built-in command's result, as the method it stands for answers it."""
    value = done.value
    result: Any
    if done.name == "new":
        result = t.SessionNewResult(session_id=value.id, file=value.file)
    elif done.name == "model":
        result = t.SetModelResult(model=model_info(ctx, value))
    elif done.name == "thinking":
        result = t.SetThinkingLevelResult(level=value)
    elif done.name == "mode":
        result = t.SetModeResult(mode=value)
    elif done.name == "export":
        result = t.ExportResult(file=str(value))
    else:
        result = value
    return t.CommandOutcome(name=done.name, result=result, summary=done.summary)
