"""Protocol types: the params and result classes of the methods, and the messages the daemon sends.

A method names its params and result classes where its handler is declared
(:mod:`.methods`, through :func:`.registry.method`); the daemon -> client notification
and requests are declared at the end of this module. Field names are snake_case here and
camelCase on the wire, through the project's one converter.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import attrs

from ..converter import converter
from ..events import AgentEvent, CompactionOutcome, PlanEntry, QueueItem as QueueItem  # re-exported (getState)
from ..messages import AgentMessageUnion
from ..json_types import JsonObject
from .editor_types import *  # noqa: F401,F403 (the editor file system's types, re-exported)
from .editor_types import (
    ApplyWorkspaceEditParams,
    ApplyWorkspaceEditResult,
    ContextItem,
    FsCapabilities,
    ReadTextFileParams,
    ReadTextFileResult,
    SaveFilesParams,
    SaveFilesResult,
)
from .initialize_types import (  # re-exported: answered before this module is loaded
    PROTOCOL_VERSION as PROTOCOL_VERSION,
    ClientCapabilities as ClientCapabilities,
    ClientInfo as ClientInfo,
    Empty as Empty,
    InitializeParams as InitializeParams,
    InitializeResult as InitializeResult,
    ServerCapabilities as ServerCapabilities,
    ServerInfo as ServerInfo,
    ServerMode as ServerMode,
)
from .extension_types import *  # noqa: F401,F403 (the extension methods' types, re-exported)
from .language_types import *  # noqa: F401,F403 (the editor's language features, re-exported)
from .language_types import (DiagnosticsParams, DiagnosticsResult, DocumentSymbol, DocumentSymbolsParams, Hover,
                             LanguageStatusParams, LanguageStatusResult, Location, ReferencesParams,
                             SymbolInformation, TextDocumentPositionParams, WorkspaceSymbolsParams)
from .extension_types import McpServerInfo
from .registry import client_request, notification
from .session_types import *  # noqa: F401,F403 (the session methods' types, re-exported)
from .model_types import *  # noqa: F401,F403 (the model methods' types, re-exported)
from .model_types import ModelInfo
from .process_types import *  # noqa: F401,F403 (the background-process methods' types, re-exported)
from .session_types import ExportResult, SessionNewResult

StreamingBehavior = Literal["steer", "followUp"]
QueueModeName = Literal["one-at-a-time", "all"]
ThinkingLevelName = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
Scope = Literal["exact", "prefix", "path", "tool"]  # what a remembered permission covers
PermissionOutcome = Literal["allow_once", "allow_session", "allow_always", "reject_once", "reject_always",
                            "reject_and_stop", "cancelled"]  # guard.permissions.OUTCOMES, as the wire names them


@attrs.define
class Image:
    data: str
    mime_type: str
    type: str = "image"


# --- lifecycle: in .initialize_types (re-exported above) ---------------------------------


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
    steering: list[str]  # the queued messages abort took back, in queue order
    follow_up: list[str]


@attrs.define
class AbortBashResult:
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
class QueueState:
    steering: list[str]
    follow_up: list[str]
    items: list[QueueItem]


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
    mode: str = "ask"
    pending_rewind: PendingRewind | None = None
    plan: list[PlanEntry] = attrs.field(factory=list)  # the plan of the last update_plan call on this branch
    plan_explanation: str | None = None


@attrs.define
class PendingRewind:
    """A rewind the daemon stopped in the middle of: ``session/rewind`` finishes it."""

    entry_id: str | None
    files: list[str]


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
    catch_up: Literal["events", "replay"] | None = None  # what follows the reply for fromSeq
    torn_line_saved_to: str | None = None
    skipped: list[SkippedLine] | None = None
    model_withheld: str | None = None


@attrs.define
class NavigateResult:
    state: SessionState
    leaf_id: str | None = None
    summary_entry_id: str | None = None


@attrs.define
class GetMessagesResult:
    messages: list[AgentMessageUnion]


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
class SetThinkingLevelParams:
    level: ThinkingLevelName
    session_id: str | None = None


@attrs.define
class SetThinkingLevelResult:
    level: str


ModeName = Literal["plan", "ask", "auto-edit"]


@attrs.define
class SetModeParams:
    mode: ModeName
    session_id: str | None = None


@attrs.define
class SetModeResult:
    mode: str


CommandResult = Union[CompactionOutcome, SessionNewResult, SetModelResult, SetThinkingLevelResult, SetModeResult,
                      ExportResult]
COMMAND_RESULTS: dict[str, type] = {"compact": CompactionOutcome, "new": SessionNewResult, "model": SetModelResult,
                                    "thinking": SetThinkingLevelResult, "mode": SetModeResult, "export": ExportResult}


@attrs.define
class CommandOutcome:
    """What a built-in slash command did (``prompt`` with ``disposition: "command"``)."""

    name: str
    result: CommandResult | None = None  # the result of the method the command stands for
    summary: str | None = None  # what it did, one line for a person ("Exported the session to …")


def _structure_command_outcome(obj: Any, _type: Any) -> CommandOutcome:
    """The result's class is the one of the command ``name`` names."""
    name = obj.get("name") if isinstance(obj, dict) else None
    if not isinstance(name, str) or name not in COMMAND_RESULTS:
        raise ValueError(f"unknown built-in command {name!r}")
    result = obj.get("result")
    summary = obj.get("summary")
    return CommandOutcome(name, None if result is None else converter.structure(result, COMMAND_RESULTS[name]),
                          summary if isinstance(summary, str) else None)


converter.register_structure_hook(CommandOutcome, _structure_command_outcome)


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
    event: AgentEvent
    replay: bool | None = None  # true on an event re-sent for session/load{replay}


# --- requests (daemon -> client) ---------------------------------------------------------


@attrs.define
class PermissionScope:
    scope: Scope
    label: str
    pattern: str | None = None


@attrs.define
class ProposedFile:
    """What a ``write`` or ``edit`` call would leave in its file, computed by the tool's own code."""
    path: str  # absolute
    text: str  # the file's whole text after the call
    exists: bool  # the file exists now (false: the call creates it)


@attrs.define
class PermissionRequestParams:
    session_id: str
    tool_call_id: str
    tool_name: str
    args: JsonObject
    title: str
    options: list[PermissionOutcome]
    remember: PermissionScope
    timeout_seconds: float
    parent_session_id: str | None = None  # the call is a subagent's (sessionId): the session that started it
    proposed: ProposedFile | None = None  # write and edit: the text the call would leave (absent: it would fail)


@attrs.define
class PermissionRequestResult:
    outcome: PermissionOutcome
    content: str | None = None  # allowing a write or edit: the text to write instead of the proposal
    reason: str | None = None  # rejecting: the user's words, given to the model as the call's result
    edited_args: JsonObject | None = None  # allowing: the arguments the call runs with instead (checked again)


@attrs.define
class QuestionOption:
    label: str
    description: str | None = None


@attrs.define
class UserAskParams:
    session_id: str
    tool_call_id: str
    question: str
    options: list[QuestionOption]
    multi_select: bool
    allow_text: bool
    timeout_seconds: float
    parent_session_id: str | None = None  # the question is a subagent's (sessionId): the session that started it


@attrs.define
class UserAskResult:
    outcome: Literal["answered", "dismissed"]
    selected: list[str] | None = None  # the labels of the options chosen
    text: str | None = None  # what the user typed


AGENT_EVENT = notification("agent/event", params=AgentEventParams,
                           summary="an event of a session, numbered by seq")
PERMISSION_REQUEST = client_request("permission/request", params=PermissionRequestParams,
                                    result=PermissionRequestResult,
                                    summary="may this tool call run? (and what to remember)")
USER_ASK = client_request("user/ask", params=UserAskParams, result=UserAskResult,
                          summary="the agent asks the user a question (ask_user tool)")
WORKSPACE_TRUST = client_request("workspace/trust", params=WorkspaceTrustParams, result=WorkspaceTrustResult,
                                 summary="may the workspace configure the daemon")
READ_TEXT_FILE = client_request("fs/readTextFile", params=ReadTextFileParams, result=ReadTextFileResult,
                                summary="the file as the editor holds it")
SAVE_FILES = client_request("fs/save", params=SaveFilesParams, result=SaveFilesResult,
                            summary="save these buffers (the agent's edits) before a command runs")
APPLY_EDIT = client_request("workspace/applyEdit", params=ApplyWorkspaceEditParams, result=ApplyWorkspaceEditResult,
                            summary="apply an edit in the editor (LSP's request)")
EDITOR_DIAGNOSTICS = client_request("editor/diagnostics", params=DiagnosticsParams, result=DiagnosticsResult,
                                    summary="the editor's diagnostics of these files (or of all)")
EDITOR_DEFINITION = client_request("editor/definition", params=TextDocumentPositionParams,
                                   result=list[Location], summary="where the symbol at a position is defined")
EDITOR_REFERENCES = client_request("editor/references", params=ReferencesParams, result=list[Location],
                                   summary="where the symbol at a position is used")
EDITOR_DOCUMENT_SYMBOLS = client_request("editor/documentSymbols", params=DocumentSymbolsParams,
                                         result=list[DocumentSymbol], summary="the symbols of a file, nested")
EDITOR_WORKSPACE_SYMBOLS = client_request("editor/workspaceSymbols", params=WorkspaceSymbolsParams,
                                          result=list[SymbolInformation],
                                          summary="the workspace's symbols matching a query")
EDITOR_LANGUAGE_STATUS = client_request("editor/languageStatus", params=LanguageStatusParams,
                                        result=LanguageStatusResult,
                                        summary="which language servers cover a file, and which are still loading")
EDITOR_HOVER = client_request("editor/hover", params=TextDocumentPositionParams,
                              result=Hover | None,  # type: ignore[arg-type]  # LSP's answer may be null
                              summary="what the language server says about the symbol at a position")
