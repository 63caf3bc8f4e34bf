"""Protocol types of the session methods (``session/*``, ``compact``, ``setAutoCompaction``).

Part of :mod:`.types`, which re-exports every name here; kept apart only to keep that
module readable. Like it, this module needs nothing but attrs (and the converter, for the
structure hook of the MCP server union).
"""

from __future__ import annotations

from typing import Any, Literal, Union

import attrs

from ..converter import converter
from ..session.entry_types import StoredEntry, StoredHeader

__all__ = [
    "SessionSearchParams",
    "SessionSearchMatch",
    "SessionSearchResult",
    "SessionSearchSkipped",
    "NameValue",
    "McpServerStdio",
    "McpServerHttp",
    "SessionNewParams",
    "SessionNewResult",
    "SessionRef",
    "SessionLoadParams",
    "SessionListParams",
    "SessionSummary",
    "SessionListResult",
    "SessionForkParams",
    "SessionForkResult",
    "SessionDeleteParams",
    "SessionDeleteResult",
    "SetNameParams",
    "SetNameResult",
    "LabelParams",
    "LabelResult",
    "ClosedResult",
    "EntriesParams",
    "EntriesResult",
    "TreeNode",
    "TreeResult",
    "TokenTotals",
    "SubagentTotals",
    "StatsResult",
    "ExportParams",
    "ExportResult",
    "NavigateParams",
    "RewindParams",
    "RewoundFile",
    "RewindConflict",
    "RewindResult",
    "CompactParams",
    "CompactResult",
    "SetAutoCompactionParams",
    "AutoCompactionSettings",
]


@attrs.define
class NameValue:
    """An environment variable of a stdio MCP server, or a header of an http one (ACP's shape)."""

    name: str
    value: str


@attrs.define
class McpServerStdio:
    """An MCP server run as a process, spoken to over its stdio (ACP's ``McpServerStdio``)."""

    name: str
    command: str
    args: list[str] = attrs.field(factory=list)
    env: list[NameValue] = attrs.field(factory=list)
    type: Literal["stdio"] = "stdio"


@attrs.define
class McpServerHttp:
    """An MCP server reached over streamable HTTP (ACP's ``McpServerHttp``)."""

    type: Literal["http"]
    name: str
    url: str
    headers: list[NameValue] = attrs.field(factory=list)


McpServer = Union[McpServerStdio, McpServerHttp]


def _structure_mcp_server(obj: Any, _type: Any) -> Any:
    """By ``type``: ``http``, or ``stdio`` (also when absent, as ACP sends it)."""
    kind = obj.get("type", "stdio") if isinstance(obj, dict) else None
    cls = {"stdio": McpServerStdio, "http": McpServerHttp}.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError("needs a command (stdio) or type 'http' with an http(s) url")
    return converter.structure(obj, cls)


converter.register_structure_hook(McpServer, _structure_mcp_server)


@attrs.define
class SessionNewParams:
    cwd: str | None = None
    name: str | None = None
    model: str | None = None
    mcp_servers: list[McpServer] | None = None  # ACP's shape: MCP servers of this session only


@attrs.define
class SessionNewResult:
    session_id: str
    file: str


@attrs.define
class SessionRef:
    session_id: str | None = None


@attrs.define
class SessionLoadParams:
    session_id: str | None = None
    file: str | None = None
    replay: bool = False
    allow_outside: bool = False
    from_seq: int | None = None  # the client has seen every event before this seq


@attrs.define
class SessionListParams:
    cwd: str | None = None


@attrs.define
class SessionSearchParams:
    query: str
    limit: int = 50


@attrs.define
class SessionSearchMatch:
    session_id: str
    file: str
    name: str | None
    first_message: str
    entry_id: str
    role: Literal["user", "assistant"]
    timestamp: str
    snippet: str


@attrs.define
class SessionSearchSkipped:
    session_id: str
    file: str
    line: int
    bytes: int
    reason: str


@attrs.define
class SessionSearchResult:
    matches: list[SessionSearchMatch]
    truncated: bool
    skipped: list[SessionSearchSkipped] | None = None


@attrs.define
class SessionSummary:
    session_id: str
    file: str
    first_message: str
    created_at: str
    updated_at: str
    message_count: int
    cwd: str
    name: str | None = None
    damaged: str | None = None  # why the file cannot be described (then only its id, file and time are known)
    parent_session_id: str | None = None  # a subagent's: the session that started it
    parent_tool_call_id: str | None = None  # ... and its task call


@attrs.define
class SessionListResult:
    sessions: list[SessionSummary]


@attrs.define
class SessionForkParams:
    entry_id: str
    session_id: str | None = None


@attrs.define
class SessionForkResult:
    session_id: str
    file: str
    text: str


@attrs.define
class SessionDeleteParams:
    session_id: str | None = None
    file: str | None = None


@attrs.define
class SessionDeleteResult:
    file: str


@attrs.define
class SetNameParams:
    name: str
    session_id: str | None = None


@attrs.define
class SetNameResult:
    name: str | None = None


@attrs.define
class LabelParams:
    entry_id: str
    label: str | None = None
    session_id: str | None = None


@attrs.define
class LabelResult:
    entry_id: str
    label: str | None = None


@attrs.define
class ClosedResult:
    closed: bool


@attrs.define
class EntriesParams:
    since: str | None = None
    limit: int | None = None
    scope: Literal["branch", "file"] = "branch"
    session_id: str | None = None


@attrs.define
class EntriesResult:
    header: StoredHeader
    entries: list[StoredEntry]
    more: bool
    cursor: str | None = None


@attrs.define
class TreeNode:
    id: str
    type: str
    timestamp: str
    on_path: bool
    child_count: int
    parent_id: str | None = None
    role: str | None = None
    text: str | None = None
    label: str | None = None


@attrs.define
class TreeResult:
    nodes: list[TreeNode]
    leaf_id: str | None = None


@attrs.define
class TokenTotals:
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int


@attrs.define
class SubagentTotals:
    """The subagents a session's ``task`` calls ran (ended ones), and what they cost."""

    count: int
    cost: float


@attrs.define
class StatsResult:
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    tokens: TokenTotals
    cost: float
    context_tokens: int
    messages_in_context: int
    context_window: int | None = None
    context_percent: float | None = None
    subagents: SubagentTotals | None = None


@attrs.define
class ExportParams:
    format: Literal["html", "markdown"]
    path: str | None = None
    scope: Literal["branch", "tree"] = "branch"
    session_id: str | None = None
    allow_outside: bool = False


@attrs.define
class ExportResult:
    file: str


@attrs.define
class NavigateParams:
    entry_id: str
    summarize: bool = False
    custom_instructions: str | None = None
    session_id: str | None = None


@attrs.define
class RewindParams:
    entry_id: str | None
    files: Literal["revert", "keep"] = "revert"
    dry_run: bool = False
    session_id: str | None = None


@attrs.define
class RewoundFile:
    path: str
    action: Literal["write", "create", "delete"]


@attrs.define
class RewindConflict:
    path: str
    reason: str


@attrs.define
class RewindResult:
    leaf_id: str | None
    dry_run: bool
    files: list[RewoundFile]
    conflicts: list[RewindConflict]


@attrs.define
class CompactParams:
    custom_instructions: str | None = None
    session_id: str | None = None


@attrs.define
class CompactResult:
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    estimated_tokens_after: int


@attrs.define
class SetAutoCompactionParams:
    enabled: bool | None = None
    reserve_tokens: int | None = None
    keep_recent_tokens: int | None = None
    session_id: str | None = None


@attrs.define
class AutoCompactionSettings:
    enabled: bool
    reserve_tokens: int
    keep_recent_tokens: int
