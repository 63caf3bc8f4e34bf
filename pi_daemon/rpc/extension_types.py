"""Protocol types of the extension methods (``listTools``, ``getCommands``).

Part of :mod:`.types`, which re-exports every name here. Like it, this module needs
nothing but attrs and the event classes.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ..events import CommandInfo

__all__ = [
    "ToolInfo",
    "McpServerInfo",
    "ListToolsResult",
    "CommandInfo",
    "GetCommandsResult",
]


@attrs.define
class ToolInfo:
    name: str
    description: str
    source: Literal["builtin", "mcp", "skill"]
    server: str | None = None


@attrs.define
class McpServerInfo:
    name: str
    source: str
    transport: str
    state: Literal["stopped", "starting", "ready", "failed"]
    tool_count: int
    tools: list[str]
    error: str | None = None


@attrs.define
class ListToolsResult:
    tools: list[ToolInfo]
    servers: list[McpServerInfo]
    problems: list[str]


@attrs.define
class GetCommandsResult:
    commands: list[CommandInfo]
    problems: list[str]

