"""What extends the agent: its tools (built-in, MCP, skills) and the slash commands (``listTools``, ``getCommands``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from .. import types as t
from ...wire.errors import SessionNotFoundError
from ..registry import method

if TYPE_CHECKING:
    from ..context import Context


@method("listTools", params=t.SessionRef, result=t.ListToolsResult, errors=(SessionNotFoundError,),
        summary="the session's tools and the MCP servers' states")
async def list_tools(ctx: "Context", p: t.SessionRef) -> t.ListToolsResult:
    from ...mcp.names import is_mcp_tool
    from ..state import server_infos

    session = ctx.session(p.session_id, create=True)
    tools = []
    for tool in session.agent.state.tools:
        source: Literal["builtin", "mcp", "skill"] = (
            "mcp" if is_mcp_tool(tool.name) else "skill" if tool.name == "skill" else "builtin")
        server = getattr(getattr(tool, "connection", None), "name", None)
        tools.append(t.ToolInfo(name=tool.name, description=tool.description, source=source, server=server))
    problems = [f"{problem.source}: {problem.message}" for problem in ctx.mcp.problems]
    return t.ListToolsResult(tools=tools, servers=server_infos(ctx, session.id), problems=problems)


@method("getCommands", params=t.Empty, result=t.GetCommandsResult,
        summary="every slash command, with source and argument hint")
async def get_commands(ctx: "Context", p: t.Empty) -> t.GetCommandsResult:
    ctx.commands.refresh()
    return t.GetCommandsResult(commands=ctx.host.command_infos(), problems=list(ctx.commands.problems))
