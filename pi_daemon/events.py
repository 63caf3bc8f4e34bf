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
from typing import Any, Awaitable, Callable, Literal

import attrs

from .converter import WIRE_ONLY_IN_PROCESS
from .messages import AssistantMessage, ToolCall, ToolResult, Usage


def _tag(value: str):
    return attrs.field(default=value, init=False)


def _partial():
    return attrs.field(default=None, metadata=WIRE_ONLY_IN_PROCESS, repr=False, eq=False)


# --- assistant stream events (provider -> agent) ------------------------------------


@attrs.define
class StartEvent:
    type: str = _tag("start")
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextStartEvent:
    type: str = _tag("text_start")
    content_index: int = 0
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextDeltaEvent:
    type: str = _tag("text_delta")
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class TextEndEvent:
    type: str = _tag("text_end")
    content_index: int = 0
    content: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingStartEvent:
    type: str = _tag("thinking_start")
    content_index: int = 0
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingDeltaEvent:
    type: str = _tag("thinking_delta")
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ThinkingEndEvent:
    type: str = _tag("thinking_end")
    content_index: int = 0
    content: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallStartEvent:
    type: str = _tag("toolcall_start")
    content_index: int = 0
    id: str = ""
    tool_name: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallDeltaEvent:
    type: str = _tag("toolcall_delta")
    content_index: int = 0
    delta: str = ""
    partial: AssistantMessage | None = _partial()


@attrs.define
class ToolcallEndEvent:
    type: str = _tag("toolcall_end")
    content_index: int = 0
    tool_call: ToolCall = attrs.field(factory=ToolCall)
    partial: AssistantMessage | None = _partial()


@attrs.define
class DoneEvent:
    type: str = _tag("done")
    reason: str = "stop"
    message: AssistantMessage = attrs.field(factory=AssistantMessage)


@attrs.define
class ErrorEvent:
    type: str = _tag("error")
    reason: Literal["error", "aborted"] = "error"
    error: AssistantMessage = attrs.field(factory=AssistantMessage)


AssistantMessageEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolcallStartEvent
    | ToolcallDeltaEvent
    | ToolcallEndEvent
    | DoneEvent
    | ErrorEvent
)


# --- agent events (agent/session -> observers) ----------------------------------------


@attrs.define
class AgentStart:
    type: str = _tag("agent_start")


@attrs.define
class AgentEnd:
    type: str = _tag("agent_end")
    messages: list[Any] = attrs.field(factory=list)
    will_retry: bool = False


@attrs.define
class AgentSettled:
    type: str = _tag("agent_settled")
    aborted: bool = False


@attrs.define
class TurnStart:
    type: str = _tag("turn_start")


@attrs.define
class TurnEnd:
    type: str = _tag("turn_end")
    message: Any = None
    tool_results: list[Any] = attrs.field(factory=list)


@attrs.define
class MessageStart:
    type: str = _tag("message_start")
    message: Any = None


@attrs.define
class MessageUpdate:
    type: str = _tag("message_update")
    assistant_message_event: Any = None
    usage: Usage | None = None
    message: AssistantMessage | None = _partial()


@attrs.define
class MessageEnd:
    type: str = _tag("message_end")
    message: Any = None
    entry_id: str | None = None  # the session entry that stores the message, once written


@attrs.define
class ToolExecutionStart:
    type: str = _tag("tool_execution_start")
    tool_call_id: str = ""
    tool_name: str = ""
    args: Any = None


@attrs.define
class ToolExecutionUpdate:
    type: str = _tag("tool_execution_update")
    tool_call_id: str = ""
    tool_name: str = ""
    args: Any = None
    partial_result: ToolResult | None = None


@attrs.define
class ToolExecutionEnd:
    type: str = _tag("tool_execution_end")
    tool_call_id: str = ""
    tool_name: str = ""
    result: ToolResult = attrs.field(factory=ToolResult)
    is_error: bool = False
    duration_ms: float | None = None


@attrs.define
class QueueItem:
    queue_id: str
    kind: str  # steer / followUp
    text: str


@attrs.define
class QueueUpdate:
    type: str = _tag("queue_update")
    steering: list[str] = attrs.field(factory=list)
    follow_up: list[str] = attrs.field(factory=list)
    items: list[QueueItem] = attrs.field(factory=list)


@attrs.define
class CompactionStart:
    type: str = _tag("compaction_start")
    reason: str = "manual"


@attrs.define
class CompactionEnd:
    type: str = _tag("compaction_end")
    reason: str = "manual"
    result: Any = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None


@attrs.define
class AutoRetryStart:
    type: str = _tag("auto_retry_start")
    attempt: int = 1
    max_attempts: int = 3
    delay_ms: int = 0
    error_message: str = ""


@attrs.define
class AutoRetryEnd:
    type: str = _tag("auto_retry_end")
    success: bool = True
    attempt: int = 1
    final_error: str | None = None


@attrs.define
class BashExecutionUpdate:
    type: str = _tag("bash_execution_update")
    request_id: Any = None
    delta: str = ""


@attrs.define
class SessionInfoChanged:
    type: str = _tag("session_info_changed")
    name: str | None = None


@attrs.define
class SessionWriteFailed:
    """An entry could not be written to the session file (disk full, I/O error)."""

    type: str = _tag("session_write_failed")
    error: str = ""
    errno: str = ""
    file: str = ""


@attrs.define
class ModelChanged:
    type: str = _tag("model_changed")
    provider: str = ""
    model_id: str = ""


@attrs.define
class ThinkingLevelChanged:
    type: str = _tag("thinking_level_changed")
    level: str = "off"


@attrs.define
class PermissionTimeout:
    type: str = _tag("permission_timeout")
    tool_call_id: str = ""
    tool_name: str = ""
    timeout_seconds: float = 0


@attrs.define
class CommandsUpdate:
    """The slash commands changed (a template or skill file was added, edited or removed)."""

    type: str = _tag("commands_update")
    commands: list[Any] = attrs.field(factory=list)


@attrs.define
class ReplayEnd:
    type: str = _tag("replay_end")
    message_count: int = 0


@attrs.define
class Replayed:
    """Wraps an event re-sent for a stored message (``session/load{replay}``); never a fact to write."""
    event: Any


@attrs.define
class TurnDiff:
    """What the run has changed so far: every file with its diff against the run's start."""

    type: str = _tag("turn_diff")
    run_id: str = ""
    files: list[Any] = attrs.field(factory=list)


AGENT_EVENT_TYPES = (
    AgentStart, AgentEnd, AgentSettled, TurnStart, TurnEnd, MessageStart, MessageUpdate,
    MessageEnd, ToolExecutionStart, ToolExecutionUpdate, ToolExecutionEnd, QueueUpdate,
    CompactionStart, CompactionEnd, AutoRetryStart, AutoRetryEnd, BashExecutionUpdate,
    SessionInfoChanged, ModelChanged, ThinkingLevelChanged, PermissionTimeout, SessionWriteFailed, CommandsUpdate, ReplayEnd, TurnDiff,
)


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
            if result is not None and inspect.isawaitable(result):
                await result
