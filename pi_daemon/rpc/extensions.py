"""The native face's words for what extends the agent: MCP server states, ACP-style server
configs in ``session/new``, and a built-in slash command's outcome (the commands themselves
run in :mod:`pi_daemon.host.commands`, the same for both faces)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, cast

from ..host.commands import BuiltinDone
from ..mcp.config import from_acp
from ..wire.errors import InvalidParams
from . import types as t

if TYPE_CHECKING:
    from .context import Context


def server_infos(ctx: "Context", session_id: str | None) -> list[t.McpServerInfo]:
    return [t.McpServerInfo(name=s.name, source=s.source, transport=s.transport,
                            state=cast(Literal["stopped", "starting", "ready", "failed"], s.state),
                            tool_count=len(s.tools), tools=s.tools, error=s.error)
            for s in ctx.mcp.states(session_id)]


def mcp_configs(items: list[dict[str, Any]] | None, cwd: str) -> list[Any]:
    try:
        return from_acp(items or [], cwd)
    except ValueError as exc:
        raise InvalidParams(f"invalid params: params.{exc}") from None


def command_outcome(ctx: "Context", done: BuiltinDone) -> t.CommandOutcome:
    """A built-in command's result, as the method it stands for answers it."""
    from .state import model_info

    value = done.value
    result: Any
    if done.name == "new":
        result = t.SessionNewResult(session_id=value.id, file=value.file)
    elif done.name == "model":
        result = t.SetModelResult(model=model_info(ctx, value))
    elif done.name == "thinking":
        result = t.SetThinkingLevelResult(level=value)
    elif done.name == "export":
        result = t.ExportResult(file=str(value))
    else:
        result = value
    return t.CommandOutcome(name=done.name, result=result)
