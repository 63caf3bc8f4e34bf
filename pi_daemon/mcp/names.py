"""The names MCP tools get among the agent's tools: ``<server>__<tool>``."""

from __future__ import annotations

import re

SEPARATOR = "__"
MAX_NAME = 64  # what the providers accept for a tool name


def is_mcp_tool(name: str) -> bool:
    """Built-in tools never have ``__`` in their names; every MCP tool has."""
    return SEPARATOR in name


def tool_name(server: str, tool: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", tool)
    return f"{server}{SEPARATOR}{safe}"[:MAX_NAME]
