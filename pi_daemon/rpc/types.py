"""Protocol types: the params and result of every method, in one place.

Each method the daemon serves is listed in :data:`METHODS` with its params and result
classes; the dispatcher structures params from them and ``protocol.md`` documents
exactly them (a test keeps the two from drifting apart). Field names are snake_case
here and camelCase on the wire, through the project's one converter.

This module only needs attrs: the ``initialize`` fast path imports it before the rest
of the daemon has loaded.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from .extension_types import *  # noqa: F401,F403 (the extension methods' types, re-exported)
from .extension_types import CommandOutcome, McpServerInfo
from .editor_types import *  # noqa: F401,F403 (the editor file system's types, re-exported)
from .editor_types import (
    ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, ChangesAcceptParams, ChangesAcceptResult, ChangesGetParams,
    ChangesResult, ChangesRevertParams, ChangesRevertResult, ContextItem, DidChangeDirtyParams, FsCapabilities, ReadTextFileParams,
    ReadTextFileResult,
)
from .session_types import *  # noqa: F401,F403 (the session methods' types, re-exported)

PROTOCOL_VERSION = 1

StreamingBehavior = Literal["steer", "followUp"]
QueueModeName = Literal["one-at-a-time", "all"]
ThinkingLevelName = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


@attrs.define
class Image:
    data: str
    mime_type: str
    type: str = "image"


# --- lifecycle ---------------------------------------------------------------------------


@attrs.define
class ClientInfo:
    name: str = ""
    version: str | None = None


@attrs.define
class ClientCapabilities:
    permissions: bool = False
    workspace_trust: bool = False
    fs: FsCapabilities | None = None


@attrs.define
class InitializeParams:
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    capabilities: ClientCapabilities = attrs.field(factory=ClientCapabilities)
    allowed_roots: list[str] | None = None


@attrs.define
class ServerInfo:
    name: str
    version: str


@attrs.define
class ServerCapabilities:
    methods: list[str]
    notifications: list[str]
    events: list[str]
    framings: list[str]
    max_frame_bytes: int
    streaming_behaviors: list[str]
    queue_modes: list[str]
    thinking_levels: list[str]
    image_input: bool = True
    permissions: bool = False
    workspace_trust: bool = False
    fs: FsCapabilities | None = None


@attrs.define
class InitializeResult:
    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities


@attrs.define
class Empty:
    pass


# --- input -------------------------------------------------------------------------------


@attrs.define
class PromptParams:
    text: str
    images: list[Image] | None = None
    streaming_behavior: StreamingBehavior | None = None
    session_id: str | None = None
    context: list[ContextItem] | None = None


@attrs.define
class PromptResult:
    disposition: Literal["started", "queued", "command"]
    queue_id: str | None = None
    command: CommandOutcome | None = None


@attrs.define
class QueueParams:
    text: str
    images: list[Image] | None = None
    session_id: str | None = None
    context: list[ContextItem] | None = None


@attrs.define
class QueuedResult:
    queue_id: str
    disposition: Literal["queued"] = "queued"


@attrs.define
class RemoveQueuedParams:
    queue_id: str
    session_id: str | None = None


@attrs.define
class RemovedResult:
    removed: bool


@attrs.define
class AbortResult:
    aborted: bool


@attrs.define
class ClearQueueResult:
    steering: list[str]
    follow_up: list[str]


@attrs.define
class BashParams:
    command: str
    exclude_from_context: bool = False
    session_id: str | None = None
    timeout: float | None = None


@attrs.define
class BashResult:
    output: str
    cancelled: bool
    truncated: bool
    exit_code: int | None = None
    full_output_path: str | None = None


@attrs.define
class WaitForIdleResult:
    aborted: bool


@attrs.define
class ContinueResult:
    disposition: Literal["started"] = "started"


# --- state -------------------------------------------------------------------------------


@attrs.define
class ModelRates:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@attrs.define
class ModelInfo:
    provider: str
    id: str
    name: str
    api: str
    context_window: int
    max_tokens: int
    reasoning: bool
    input: list[str]
    cost: ModelRates
    available: bool = True
    unavailable_reason: str | None = None


@attrs.define
class UnavailableModels:
    provider: str
    reason: str
    models: list[str]


@attrs.define
class QueuedItem:
    queue_id: str
    kind: Literal["steer", "followUp"]
    text: str


@attrs.define
class QueueState:
    steering: list[str]
    follow_up: list[str]
    items: list[QueuedItem]


@attrs.define
class SessionSettingsState:
    auto_retry: AutoRetrySettings
    auto_compaction: AutoCompactionSettings


@attrs.define
class SandboxState:
    active: bool
    network: bool
    reason: str | None = None


@attrs.define
class SessionState:
    session_id: str
    model: ModelInfo | None
    thinking_level: str
    is_streaming: bool
    steering_mode: str
    follow_up_mode: str
    message_count: int
    pending_message_count: int
    queue: QueueState
    is_compacting: bool
    settings: SessionSettingsState
    cwd: str
    session_file: str | None = None
    session_name: str | None = None
    last_error: str | None = None
    read_only: str | None = None
    workspace_trust: WorkspaceTrustState | None = None
    sandbox: SandboxState | None = None
    mcp_servers: list[McpServerInfo] | None = None


@attrs.define
class SkippedLine:
    line: int
    reason: str


@attrs.define
class TrustReason:
    file: str
    field: str
    effect: str


@attrs.define
class WorkspaceTrustState:
    trusted: bool
    decided: bool
    ignored: list[TrustReason]


@attrs.define
class WorkspaceTrustParams:
    workspace: str
    reasons: list[TrustReason]


@attrs.define
class WorkspaceTrustResult:
    trusted: bool


@attrs.define
class SessionLoadResult:
    session_id: str
    file: str
    state: SessionState
    interrupted: bool
    next_seq: int
    torn_line_saved_to: str | None = None
    skipped: list[SkippedLine] | None = None


@attrs.define
class NavigateResult:
    state: SessionState
    leaf_id: str | None = None
    summary_entry_id: str | None = None


@attrs.define
class GetMessagesResult:
    messages: list[Any]


@attrs.define
class ListModelsResult:
    models: list[ModelInfo]
    unavailable: list[UnavailableModels]


@attrs.define
class SetAutoRetryParams:
    enabled: bool | None = None
    max_attempts: int | None = None
    base_delay_ms: int | None = None
    session_id: str | None = None


@attrs.define
class AutoRetrySettings:
    enabled: bool
    max_attempts: int
    base_delay_ms: int


@attrs.define
class SetModelParams:
    provider: str
    model_id: str
    session_id: str | None = None


@attrs.define
class SetModelResult:
    model: ModelInfo


@attrs.define
class SetThinkingLevelParams:
    level: ThinkingLevelName
    session_id: str | None = None


@attrs.define
class SetThinkingLevelResult:
    level: str


@attrs.define
class SetQueueModesParams:
    steering: QueueModeName | None = None
    follow_up: QueueModeName | None = None
    session_id: str | None = None


@attrs.define
class SetQueueModesResult:
    steering: str
    follow_up: str


# --- notifications (daemon -> client) -----------------------------------------------------


@attrs.define
class AgentEventParams:
    session_id: str
    seq: int
    event: dict[str, Any]
    replay: bool | None = None


# --- requests (daemon -> client) ---------------------------------------------------------


@attrs.define
class PermissionScope:
    scope: Literal["exact", "prefix", "path", "tool"]
    label: str
    pattern: str | None = None


@attrs.define
class PermissionRequestParams:
    session_id: str
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    title: str
    options: list[str]
    remember: PermissionScope
    timeout_seconds: float


@attrs.define
class PermissionRequestResult:
    outcome: str


@attrs.define
class Method:
    params: type
    result: type | None  # None: a notification, no reply
    summary: str


METHODS: dict[str, Method] = {
    "initialize": Method(InitializeParams, InitializeResult, "negotiate version and capabilities"),
    "shutdown": Method(Empty, Empty, "abort runs, answer, then wait for exit"),
    "exit": Method(Empty, None, "stop the process"),
    "session/new": Method(SessionNewParams, SessionNewResult, "create a session; it becomes current"),
    "session/load": Method(SessionLoadParams, SessionLoadResult, "open a stored session; it becomes current"),
    "session/list": Method(SessionListParams, SessionListResult, "the workspace's sessions, newest first"),
    "session/fork": Method(SessionForkParams, SessionForkResult, "new session with the path before a user message"),
    "session/clone": Method(SessionRef, SessionNewResult, "new session with the whole current path"),
    "session/delete": Method(SessionDeleteParams, SessionDeleteResult, "delete a session file"),
    "session/setName": Method(SetNameParams, SetNameResult, "name the session"),
    "session/close": Method(SessionRef, ClosedResult, "close an open session"),
    "session/label": Method(LabelParams, LabelResult, "set or clear a label on an entry"),
    "session/entries": Method(EntriesParams, EntriesResult, "raw entries after a cursor"),
    "session/tree": Method(SessionRef, TreeResult, "the entry tree"),
    "session/stats": Method(SessionRef, StatsResult, "counts, tokens, cost, context usage"),
    "session/export": Method(ExportParams, ExportResult, "the history of the branch or tree as HTML or Markdown"),
    "session/navigate": Method(NavigateParams, NavigateResult, "move the current position to another entry"),
    "compact": Method(CompactParams, CompactResult, "summarise the older context now"),
    "setAutoCompaction": Method(SetAutoCompactionParams, AutoCompactionSettings, "switch and tune auto-compaction"),
    "prompt": Method(PromptParams, PromptResult, "start a run, or queue while one runs"),
    "steer": Method(QueueParams, QueuedResult, "queue a steering message"),
    "followUp": Method(QueueParams, QueuedResult, "queue a follow-up message"),
    "abort": Method(SessionRef, AbortResult, "stop the current run"),
    "clearQueue": Method(SessionRef, ClearQueueResult, "remove queued messages"),
    "removeQueued": Method(RemoveQueuedParams, RemovedResult, "remove one queued message"),
    "continue": Method(SessionRef, ContinueResult, "resume from the transcript"),
    "waitForIdle": Method(SessionRef, WaitForIdleResult, "answer once the session has settled"),
    "bash": Method(BashParams, BashResult, "run a shell command for the user"),
    "abortBash": Method(SessionRef, AbortResult, "stop the user's shell command"),
    "getState": Method(SessionRef, SessionState, "session state"),
    "getMessages": Method(SessionRef, GetMessagesResult, "messages of the context"),
    "listModels": Method(Empty, ListModelsResult, "usable models, and why the others are not"),
    "setModel": Method(SetModelParams, SetModelResult, "choose the session's model"),
    "setThinkingLevel": Method(SetThinkingLevelParams, SetThinkingLevelResult, "choose the thinking level"),
    "setQueueModes": Method(SetQueueModesParams, SetQueueModesResult, "choose the queue modes"),
    "setAutoRetry": Method(SetAutoRetryParams, AutoRetrySettings, "switch and tune automatic retry"),
    "listTools": Method(SessionRef, ListToolsResult, "the session's tools and the MCP servers' states"),  # noqa: F405
    "getCommands": Method(Empty, GetCommandsResult, "every slash command, with source and argument hint"),  # noqa: F405
    "changes/get": Method(ChangesGetParams, ChangesResult, "what a run changed: files, hunks, diffs"),
    "changes/revert": Method(ChangesRevertParams, ChangesRevertResult, "take back a run's files or hunks"),
    "changes/accept": Method(ChangesAcceptParams, ChangesAcceptResult, "mark a run's hunks reviewed"),
    "fs/didChangeDirty": Method(DidChangeDirtyParams, None, "which buffers have unsaved changes now"),
}

NOTIFICATIONS: dict[str, type] = {"agent/event": AgentEventParams}

CLIENT_REQUESTS: dict[str, Method] = {
    "permission/request": Method(PermissionRequestParams, PermissionRequestResult,
                                 "may this tool call run? (and what to remember)"),
    "workspace/trust": Method(WorkspaceTrustParams, WorkspaceTrustResult, "may the workspace configure the daemon"),
    "fs/readTextFile": Method(ReadTextFileParams, ReadTextFileResult, "the file as the editor holds it"),
    "workspace/applyEdit": Method(ApplyWorkspaceEditParams, ApplyWorkspaceEditResult,
                                  "apply an edit in the editor (LSP's request)"),
}
