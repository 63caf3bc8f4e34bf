"""Events are notifications: how the facts are changing, for observers.

Two families live here:

* assistant stream events, produced by a provider while one assistant message
  streams (``start``, ``text_*``, ``thinking_*``, ``toolcall_*``, ``done``, ``error``);
* agent events, produced by the agent loop and the session for every observer.

In-process, stream events carry the cumulative ``partial`` message; that field never
reaches the wire, so a stream's size on the wire stays linear in its content.
"""

from __future__ import annotations

import inspect
import typing
from types import CoroutineType
from typing import Any, Awaitable, Callable, Literal, Union

import attrs

from .converter import WIRE_ONLY_IN_PROCESS, converter
from .messages import AgentMessageUnion, AssistantMessage, ToolCall, ToolResult, ToolResultMessage, Usage
from .json_types import JsonObject


def _partial() -> Any:
    return attrs.field(default=None, metadata=WIRE_ONLY_IN_PROCESS, repr=False, eq=False)


# --- assistant stream events (provider -> agent) ------------------------------------


@attrs.define
class StartEvent:
    type: Literal["start"] = attrs.field(default="start", init=False)
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextStartEvent:
    type: Literal["text_start"] = attrs.field(default="text_start", init=False)
    content_index: int = 0
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextDeltaEvent:
    type: Literal["text_delta"] = attrs.field(default="text_delta", init=False)
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextEndEvent:
    type: Literal["text_end"] = attrs.field(default="text_end", init=False)
    content_index: int = 0
    content: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingStartEvent:
    type: Literal["thinking_start"] = attrs.field(default="thinking_start", init=False)
    content_index: int = 0
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingDeltaEvent:
    type: Literal["thinking_delta"] = attrs.field(default="thinking_delta", init=False)
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingEndEvent:
    type: Literal["thinking_end"] = attrs.field(default="thinking_end", init=False)
    content_index: int = 0
    content: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallStartEvent:
    type: Literal["toolcall_start"] = attrs.field(default="toolcall_start", init=False)
    content_index: int = 0
    id: str = ""
    tool_name: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallDeltaEvent:
    type: Literal["toolcall_delta"] = attrs.field(default="toolcall_delta", init=False)
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallEndEvent:
    type: Literal["toolcall_end"] = attrs.field(default="toolcall_end", init=False)
    content_index: int = 0
    tool_call: ToolCall = attrs.field(factory=ToolCall)
    partial: AssistantMessage | None = _partial()


@attrs.define
class DoneEvent:
    type: Literal["done"] = attrs.field(default="done", init=False)
    reason: str = "stop"
    message: AssistantMessage = attrs.field(factory=AssistantMessage)


@attrs.define
class ErrorEvent:
    type: Literal["error"] = attrs.field(default="error", init=False)
    reason: Literal["error", "aborted"] = "error"
    error: AssistantMessage = attrs.field(factory=AssistantMessage)


AssistantMessageDelta = Union[
    TextStartEvent,
    TextDeltaEvent,
    TextEndEvent,
    ThinkingStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ToolcallStartEvent,
    ToolcallDeltaEvent,
    ToolcallEndEvent,
]
"""What ``message_update`` carries: ``start`` is ``message_start``, ``done`` / ``error`` are ``message_end``."""

AssistantMessageEvent = Union[StartEvent, AssistantMessageDelta, DoneEvent, ErrorEvent]
"""What a provider streams."""


# --- agent events (agent/session -> observers) ----------------------------------------


@attrs.define
class AgentStart:
    type: Literal["agent_start"] = attrs.field(default="agent_start", init=False)


@attrs.define
class AgentEnd:
    type: Literal["agent_end"] = attrs.field(default="agent_end", init=False)
    messages: list[AgentMessageUnion] = attrs.field(factory=list)
    will_retry: bool = False
    stop_reason: Literal["rejected"] | None = None  # the user rejected a call and stopped the run


@attrs.define
class AgentSettled:
    type: Literal["agent_settled"] = attrs.field(default="agent_settled", init=False)
    aborted: bool = False
    stop_reason: Literal["rejected"] | None = None  # the user rejected a call and stopped the run


@attrs.define
class TurnStart:
    type: Literal["turn_start"] = attrs.field(default="turn_start", init=False)


@attrs.define
class TurnEnd:
    type: Literal["turn_end"] = attrs.field(default="turn_end", init=False)
    message: AssistantMessage = attrs.field(kw_only=True)
    tool_results: list[ToolResultMessage] = attrs.field(factory=list)


@attrs.define
class MessageStart:
    type: Literal["message_start"] = attrs.field(default="message_start", init=False)
    message: AgentMessageUnion = attrs.field(kw_only=True)


@attrs.define
class MessageUpdate:
    type: Literal["message_update"] = attrs.field(default="message_update", init=False)
    assistant_message_event: AssistantMessageDelta = attrs.field(kw_only=True)
    usage: Usage | None = None
    message: AssistantMessage | None = _partial()


@attrs.define
class MessageEnd:
    type: Literal["message_end"] = attrs.field(default="message_end", init=False)
    message: AgentMessageUnion = attrs.field(kw_only=True)
    entry_id: str | None = None  # the session entry that stores the message, once written


@attrs.define
class ToolExecutionStart:
    type: Literal["tool_execution_start"] = attrs.field(default="tool_execution_start", init=False)
    tool_call_id: str = ""
    tool_name: str = ""
    args: JsonObject | None = None
    edited_by_user: bool | None = None  # sent again with the arguments the user edited before allowing it


@attrs.define
class ToolExecutionUpdate:
    type: Literal["tool_execution_update"] = attrs.field(default="tool_execution_update", init=False)
    tool_call_id: str = ""
    tool_name: str = ""
    args: JsonObject | None = None
    partial_result: ToolResult | None = None


@attrs.define
class ToolExecutionEnd:
    type: Literal["tool_execution_end"] = attrs.field(default="tool_execution_end", init=False)
    tool_call_id: str = ""
    tool_name: str = ""
    result: ToolResult = attrs.field(factory=ToolResult)
    is_error: bool = False
    duration_ms: float | None = None


@attrs.define
class QueueItem:
    """A queued message (``queue_update.items``, ``getState.queue.items``)."""

    queue_id: str
    kind: Literal["steer", "followUp"]
    text: str


@attrs.define
class QueueUpdate:
    type: Literal["queue_update"] = attrs.field(default="queue_update", init=False)
    steering: list[str] = attrs.field(factory=list)
    follow_up: list[str] = attrs.field(factory=list)
    items: list[QueueItem] = attrs.field(factory=list)


@attrs.define
class CompactionStart:
    type: Literal["compaction_start"] = attrs.field(default="compaction_start", init=False)
    reason: str = "manual"


@attrs.define
class CompactionOutcome:
    """What a compaction did (``compaction_end.result``, and the ``compact`` method's answer)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int
    estimated_tokens_after: int
    entry_id: str
    details: CompactionDetails | None = None


@attrs.define
class CompactionDetails:
    """The files the summarised part of the conversation read and changed."""

    read_files: list[str] = attrs.field(factory=list)
    modified_files: list[str] = attrs.field(factory=list)


@attrs.define
class CompactionEnd:
    type: Literal["compaction_end"] = attrs.field(default="compaction_end", init=False)
    reason: str = "manual"
    result: CompactionOutcome | None = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None


@attrs.define
class AutoRetryStart:
    type: Literal["auto_retry_start"] = attrs.field(default="auto_retry_start", init=False)
    attempt: int = 1
    max_attempts: int = 3
    delay_ms: int = 0
    error_message: str = ""


@attrs.define
class AutoRetryEnd:
    type: Literal["auto_retry_end"] = attrs.field(default="auto_retry_end", init=False)
    success: bool = True
    attempt: int = 1
    final_error: str | None = None


@attrs.define
class BashExecutionUpdate:
    type: Literal["bash_execution_update"] = attrs.field(default="bash_execution_update", init=False)
    request_id: str | int | None = None
    delta: str = ""


@attrs.define
class SessionInfoChanged:
    type: Literal["session_info_changed"] = attrs.field(default="session_info_changed", init=False)
    name: str | None = None


@attrs.define
class SessionWriteFailed:
    """An entry could not be written to the session file (disk full, I/O error)."""

    type: Literal["session_write_failed"] = attrs.field(default="session_write_failed", init=False)
    error: str = ""
    errno: str = ""
    file: str = ""


@attrs.define
class ModelChanged:
    type: Literal["model_changed"] = attrs.field(default="model_changed", init=False)
    provider: str = ""
    model_id: str = ""


@attrs.define
class ModeChanged:
    """The session's mode changed (``setMode``): plan, ask or auto-edit."""

    type: Literal["mode_changed"] = attrs.field(default="mode_changed", init=False)
    mode: str = ""


@attrs.define
class ThinkingLevelChanged:
    type: Literal["thinking_level_changed"] = attrs.field(default="thinking_level_changed", init=False)
    level: str = "off"


@attrs.define
class PermissionTimeout:
    type: Literal["permission_timeout"] = attrs.field(default="permission_timeout", init=False)
    tool_call_id: str = ""
    tool_name: str = ""
    timeout_seconds: float = 0


@attrs.define
class PlanEntry:
    """One step of the session's plan (``plan_updated``, ``getState.plan``)."""

    step: str
    status: Literal["pending", "in_progress", "completed"]


@attrs.define
class PlanUpdated:
    """The session's plan now: after an ``update_plan`` call, on ``session/load``, after a rewind or navigate."""

    type: Literal["plan_updated"] = attrs.field(default="plan_updated", init=False)
    entries: list[PlanEntry] = attrs.field(factory=list)
    explanation: str | None = None


@attrs.define
class QuestionTimeout:
    """Nobody answered a ``user/ask`` in time; the question was withdrawn."""

    type: Literal["question_timeout"] = attrs.field(default="question_timeout", init=False)
    tool_call_id: str = ""


@attrs.define
class CommandInfo:
    """A slash command (``getCommands``, ``commands_update``)."""

    name: str
    description: str
    source: Literal["builtin", "template", "skill"]
    argument_hint: str | None = None
    file: str | None = None


@attrs.define
class CommandsUpdate:
    """The slash commands changed (a template or skill file was added, edited or removed)."""

    type: Literal["commands_update"] = attrs.field(default="commands_update", init=False)
    commands: list[CommandInfo] = attrs.field(factory=list)


@attrs.define
class ReplayEnd:
    type: Literal["replay_end"] = attrs.field(default="replay_end", init=False)
    message_count: int = 0


@attrs.define
class Replayed:
    """Wraps an event re-sent for a stored message (``session/load{replay}``); never a fact to write."""
    event: Any


@attrs.define
class ChangedHunk:
    """One hunk of a run's change to a file (``turn_diff``, ``changes/get``)."""

    id: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    header: str
    accepted: bool = False


@attrs.define
class ChangedFile:
    """A file a run changed, with its unified diff against the run's start."""

    path: str
    status: Literal["added", "modified", "deleted"]
    hunks: list[ChangedHunk]
    diff: str
    before: str | None = None
    after: str | None = None
    reason: str | None = None
    size: int | None = None
    mtime: int | None = None


@attrs.define
class SkippedFolder:
    """A folder the change record did not look into (too deep, or past a walk's count), and why."""

    path: str
    reason: str


@attrs.define
class IntroducedDiagnostic:
    """An error or warning the editor's language servers report since a write or edit (1-based place)."""

    line: int
    column: int
    severity: str  # error, warning
    message: str
    source: str | None = None


@attrs.define
class Diagnostics:
    """A write or edit introduced errors or warnings (the editor's language servers)."""

    type: Literal["diagnostics"] = attrs.field(default="diagnostics", init=False)
    tool_call_id: str = ""
    path: str = ""
    introduced: list[IntroducedDiagnostic] = attrs.field(factory=list)


@attrs.define
class TurnDiff:
    """What the run has changed so far: every file with its diff against the run's start."""

    type: Literal["turn_diff"] = attrs.field(default="turn_diff", init=False)
    run_id: str = ""
    files: list[ChangedFile] = attrs.field(factory=list)
    skipped: list[SkippedFolder] | None = None  # folders whose changes are not recorded


@attrs.define
class SubagentStart:
    """A ``task`` tool call started a subagent: a child session with its own events."""

    type: Literal["subagent_start"] = attrs.field(default="subagent_start", init=False)
    tool_call_id: str = ""
    session_id: str = ""  # the child session's
    description: str = ""


@attrs.define
class SubagentEnd:
    """A subagent ended; its usage and cost count in this session's stats."""

    type: Literal["subagent_end"] = attrs.field(default="subagent_end", init=False)
    tool_call_id: str = ""
    session_id: str = ""  # the child session's
    status: Literal["completed", "failed", "aborted"] = "completed"
    usage: Usage | None = None
    cost: float | None = None


AgentEvent = Union[
    AgentStart, AgentEnd, AgentSettled, TurnStart, TurnEnd, MessageStart, MessageUpdate,
    MessageEnd, ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd, QueueUpdate,
    CompactionStart, CompactionEnd, AutoRetryStart, AutoRetryEnd, BashExecutionUpdate,
    SessionInfoChanged, ModelChanged, ThinkingLevelChanged, ModeChanged, PermissionTimeout, SessionWriteFailed,
    CommandsUpdate, ReplayEnd, TurnDiff, Diagnostics, SubagentStart, SubagentEnd, PlanUpdated, QuestionTimeout,
]
"""Every event of ``agent/event``, tagged by its ``type``."""
AGENT_EVENT_TYPES: tuple[type, ...] = typing.get_args(AgentEvent)


def _structure_tagged(members: tuple[type, ...]) -> Callable[[Any, Any], Any]:
    """Structure a union of event classes by its ``type`` tag (a client reading events)."""
    by_tag = {attrs.fields(cls).type.default: cls for cls in members}
    hooks: dict[str, Callable[[Any, Any], Any]] = {}  # the class's own hook: no dispatch per event

    def hook(obj: Any, _type: Any) -> Any:
        cls = by_tag.get(obj.get("type")) if isinstance(obj, dict) else None
        if cls is None:
            raise ValueError(f"unknown event type {obj.get('type') if isinstance(obj, dict) else obj!r}")
        found = hooks.get(cls.__name__)
        if found is None:
            found = hooks[cls.__name__] = converter.get_structure_hook(cls)
        return found(obj, cls)

    return hook


converter.register_structure_hook(AgentEvent, _structure_tagged(AGENT_EVENT_TYPES))
converter.register_structure_hook(AssistantMessageDelta, _structure_tagged(typing.get_args(AssistantMessageDelta)))


Listener = Callable[[Any], Awaitable[None] | None]


class Observers:
    """Listeners of an event source, awaited one after another for every event.

    Awaiting in order gives each listener a consistent state, and lets a slow listener
    (a client that does not read) slow the source down instead of piling events up.
    """

    def __init__(self) -> None:
        self._listeners: tuple[Listener, ...] = ()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners = (*self._listeners, listener)

        def unsubscribe() -> None:
            self._listeners = tuple(x for x in self._listeners if x is not listener)

        return unsubscribe

    async def emit(self, event: Any) -> None:
        for listener in self._listeners:  # a snapshot: (un)subscribing replaces the tuple
            result = listener(event)
            # A coroutine, the common case, is known by its type: isawaitable is a call per event.
            if result is not None and (type(result) is CoroutineType or inspect.isawaitable(result)):
                await result
