"""Protocol types of the extension methods (``listTools``, ``getCommands``) and slash commands.

Part of :mod:`.types`, which re-exports every name here. Like it, this module needs
nothing but attrs.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = [
    "ToolInfo",
    "McpServerInfo",
    "ListToolsResult",
    "CommandInfo",
    "GetCommandsResult",
    "CommandOutcome",
]


@attrs.define
class ToolInfo:
    name: str
    description: str
    source: str  # builtin, mcp, skill
    server: str | None = None


@attrs.define
class McpServerInfo:
    name: str
    source: str
    transport: str
    state: str  # stopped, starting, ready, failed
    tool_count: int
    tools: list[str]
    error: str | None = None


@attrs.define
class ListToolsResult:
    tools: list[ToolInfo]
    servers: list[McpServerInfo]
    problems: list[str]


@attrs.define
class CommandInfo:
    name: str
    description: str
    source: str  # builtin, template, skill
    argument_hint: str | None = None
    file: str | None = None


@attrs.define
class GetCommandsResult:
    commands: list[CommandInfo]
    problems: list[str]


@attrs.define
class CommandOutcome:
    """What a built-in slash command did (``prompt`` with ``disposition: "command"``)."""

    name: str
    result: Any = None
