"""Messages are facts: content blocks, the three LLM roles and application roles.

``AgentMessage`` is the durable record of a conversation. The LLM roles are ``user``,
``assistant`` and ``toolResult``; applications register further roles (with a
conversion to model input) in the role registry. A message of a role nobody
registered is kept as :class:`UnknownMessage` and written back exactly as read.
"""

from __future__ import annotations

import time
import typing
from typing import Any, Callable, Literal, Union

import attrs

from .converter import converter, from_wire, to_wire
from .json_types import JsonObject

StopReason = Literal["stop", "length", "toolUse", "error", "aborted", "pending"]


def now_ms() -> int:
    return int(time.time() * 1000)


# --- content blocks --------------------------------------------------------------


@attrs.define
class TextContent:
    type: Literal["text"] = attrs.field(default="text", init=False)
    text: str = ""
    text_signature: str | None = None


@attrs.define
class ImageContent:
    type: Literal["image"] = attrs.field(default="image", init=False)
    data: str = ""
    mime_type: str = "image/png"


@attrs.define
class ThinkingContent:
    type: Literal["thinking"] = attrs.field(default="thinking", init=False)
    thinking: str = ""
    thinking_signature: str | None = None
    redacted: bool | None = None


@attrs.define
class ToolCall:
    type: Literal["toolCall"] = attrs.field(default="toolCall", init=False)
    id: str = ""
    name: str = ""
    arguments: JsonObject = attrs.field(factory=dict)
    thought_signature: str | None = None  # provider-specific (Gemini's), sent back with the call
    # The arguments text as streamed, when it was not whole JSON (cut off at the output
    # limit): the model is shown what it sent. In-process only.
    received_arguments: str | None = attrs.field(default=None, metadata={"wire": False}, eq=False, repr=False)


UserContent = Union[TextContent, ImageContent]
AssistantContent = Union[TextContent, ThinkingContent, ToolCall]
ContentBlock = Union[TextContent, ImageContent, ThinkingContent, ToolCall]

_BLOCKS: dict[str, type] = {
    "text": TextContent,
    "image": ImageContent,
    "thinking": ThinkingContent,
    "toolCall": ToolCall,
}


def _structure_block(allowed: tuple[type, ...]) -> Callable[[Any, Any], Any]:
    def hook(obj: Any, _type: Any) -> Any:
        if not isinstance(obj, dict):
            raise ValueError(f"content block must be an object, got {type(obj).__name__}")
        cls = _BLOCKS.get(str(obj.get("type")))
        if cls is None or cls not in allowed:
            names = ", ".join(attrs.fields(c).type.default for c in allowed)
            raise ValueError(f"content block type {obj.get('type')!r} is not one of: {names}")
        return converter.structure(obj, cls)

    return hook


converter.register_structure_hook(UserContent, _structure_block((TextContent, ImageContent)))
converter.register_structure_hook(
    AssistantContent, _structure_block((TextContent, ThinkingContent, ToolCall))
)
converter.register_structure_hook(ContentBlock, _structure_block(tuple(_BLOCKS.values())))


def _structure_user_content(obj: Any, _type: Any) -> str | list[UserContent]:
    if isinstance(obj, str):
        return obj
    if isinstance(obj, list):
        return [converter.structure(item, UserContent) for item in obj]  # type: ignore[arg-type]
    raise ValueError("content must be a string or a list of text/image blocks")


converter.register_structure_hook(Union[str, list[UserContent]], _structure_user_content)


# --- usage -------------------------------------------------------------------------


@attrs.define
class Cost:
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


@attrs.define
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = attrs.field(factory=Cost)


# --- the LLM roles -----------------------------------------------------------------


@attrs.define
class SlashCommandUse:
    """A template or skill command as the user typed it (``UserMessage.command``)."""

    name: str
    source: Literal["template", "skill"]
    input: str


@attrs.define
class UserMessage:
    role: Literal["user"] = attrs.field(default="user", init=False)
    content: str | list[UserContent] = ""
    timestamp: int = attrs.field(factory=now_ms)
    # The slash command the user typed; ``content`` is what it expanded to.
    command: SlashCommandUse | None = None


@attrs.define
class AssistantMessage:
    role: Literal["assistant"] = attrs.field(default="assistant", init=False)
    content: list[AssistantContent] = attrs.field(factory=list)
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = attrs.field(factory=now_ms)
    # The provider refused the credentials (HTTP 401/403): which provider; never retried.
    error_kind: Literal["auth"] | None = None
    error_provider: str | None = None
    # In-process only: the provider's classification of a failure (retryable, overflow).
    error_detail: Any = attrs.field(default=None, metadata={"wire": False}, eq=False, repr=False)

    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]

    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


@attrs.define
class ToolResultMessage:
    role: Literal["toolResult"] = attrs.field(default="toolResult", init=False)
    tool_call_id: str = ""
    tool_name: str = ""
    content: list[UserContent] = attrs.field(factory=list)
    details: Any = None
    is_error: bool = False
    timestamp: int = attrs.field(factory=now_ms)


LlmMessage = Union[UserMessage, AssistantMessage, ToolResultMessage]


# --- application roles ---------------------------------------------------------------


@attrs.define
class BashExecutionMessage:
    role: Literal["bashExecution"] = attrs.field(default="bashExecution", init=False)
    command: str = ""
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    exclude_from_context: bool | None = None
    timestamp: int = attrs.field(factory=now_ms)


@attrs.define
class CustomMessage:
    role: Literal["custom"] = attrs.field(default="custom", init=False)
    custom_type: str = ""
    content: str | list[UserContent] = ""
    display: bool = True
    details: Any = None
    timestamp: int = attrs.field(factory=now_ms)


@attrs.define
class CompactionSummaryMessage:
    role: Literal["compactionSummary"] = attrs.field(default="compactionSummary", init=False)
    summary: str = ""
    tokens_before: int = 0
    timestamp: int = attrs.field(factory=now_ms)


@attrs.define
class BranchSummaryMessage:
    role: Literal["branchSummary"] = attrs.field(default="branchSummary", init=False)
    summary: str = ""
    from_id: str | None = None
    timestamp: int = attrs.field(factory=now_ms)


@attrs.define
class UnknownMessage:
    """A message of a role this build does not know; ``data`` is kept verbatim."""

    data: dict[str, Any]

    @property
    def role(self) -> str:
        return typing.cast(str, self.data.get("role", ""))

    @property
    def timestamp(self) -> int:
        return typing.cast(int, self.data.get("timestamp", 0))


AgentMessage = Any  # any registered role class, or UnknownMessage

converter.register_unstructure_hook(UnknownMessage, lambda m: m.data)


# --- role registry --------------------------------------------------------------------

ToLlm = Callable[[Any], "LlmMessage | None"]


@attrs.define
class _Role:
    cls: type
    to_llm: ToLlm | None


_ROLES: dict[str, _Role] = {}


def register_role(role: str, cls: type, to_llm: ToLlm | None) -> None:
    """Register an application role: its attrs class and how the model sees it.

    ``to_llm`` returns an LLM message for the model, or ``None`` to leave the message
    out of model input. LLM roles pass ``None`` here: they are sent as they are.
    """
    _ROLES[role] = _Role(cls, to_llm)


def role_to_llm(message: Any) -> LlmMessage | None:
    """What the model sees of ``message`` under the registered conversions."""
    if isinstance(message, (UserMessage, AssistantMessage, ToolResultMessage)):
        return message
    role = _ROLES.get(getattr(message, "role", ""))
    if role is None or role.to_llm is None:
        return None
    return role.to_llm(message)


def message_from_wire(data: Any) -> AgentMessage:
    if not isinstance(data, dict):
        raise ValueError(f"message must be an object, got {type(data).__name__}")
    role = _ROLES.get(str(data.get("role")))
    if role is None:
        return UnknownMessage(dict(data))
    return from_wire(data, role.cls)


def message_to_wire(message: AgentMessage) -> dict[str, Any]:
    return typing.cast(dict[str, Any], to_wire(message))


def _bash_to_llm(m: BashExecutionMessage) -> UserMessage | None:
    if m.exclude_from_context:
        return None
    status = "cancelled" if m.cancelled else f"exit code {m.exit_code}"
    text = f"The user ran a shell command ({status}):\n$ {m.command}\n{m.output}"
    if m.truncated and m.full_output_path:
        text += f"\n[output truncated; full output in {m.full_output_path}]"
    return UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp)


def _custom_to_llm(m: CustomMessage) -> UserMessage:
    return UserMessage(content=m.content, timestamp=m.timestamp)


def _compaction_to_llm(m: CompactionSummaryMessage) -> UserMessage:
    text = (
        "The conversation before this point was compacted into this summary:\n"
        f"<summary>\n{m.summary}\n</summary>"
    )
    return UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp)


def _branch_to_llm(m: BranchSummaryMessage) -> UserMessage:
    text = (
        "The following summarises a branch of this conversation that was left:\n"
        f"<summary>\n{m.summary}\n</summary>"
    )
    return UserMessage(content=[TextContent(text=text)], timestamp=m.timestamp)


register_role("user", UserMessage, None)
register_role("assistant", AssistantMessage, None)
register_role("toolResult", ToolResultMessage, None)
register_role("bashExecution", BashExecutionMessage, _bash_to_llm)
register_role("custom", CustomMessage, _custom_to_llm)
register_role("compactionSummary", CompactionSummaryMessage, _compaction_to_llm)
register_role("branchSummary", BranchSummaryMessage, _branch_to_llm)

AgentMessageUnion = Union[
    UserMessage, AssistantMessage, ToolResultMessage, BashExecutionMessage, CustomMessage,
    CompactionSummaryMessage, BranchSummaryMessage, UnknownMessage,
]
"""Every message on the wire: the built-in roles, or one this build does not know."""
converter.register_structure_hook(AgentMessageUnion, lambda obj, _type: message_from_wire(obj))


def known_roles() -> list[str]:
    return list(_ROLES)


def user_text(message: Any) -> str:
    """The plain text of a user-like message's content."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


@attrs.define
class ToolResult:
    """What a tool returns: content for the model, details for clients, an error flag."""

    content: list[UserContent] = attrs.field(factory=list)
    details: Any = None
    is_error: bool | None = None

    @classmethod
    def text(cls, text: str, details: Any = None, is_error: bool | None = None) -> "ToolResult":
        return cls(content=[TextContent(text=text)], details=details, is_error=is_error)
