"""What an agent holds between and during runs: model, system prompt, tools, the transcript."""

from __future__ import annotations

from typing import Any, Callable, Literal

import attrs

from ..llm.model import Model, ThinkingLevel
from ..messages import AssistantMessage
from ..tools.base import Tool


@attrs.define
class AgentState:
    model: Model
    system_prompt: str = ""
    thinking_level: ThinkingLevel = "off"
    tools: list[Tool] = attrs.field(factory=list)
    _messages: list[Any] = attrs.field(factory=list)
    is_streaming: bool = False
    streaming_message: AssistantMessage | None = None
    pending_tool_calls: set[str] = attrs.field(factory=set)
    error: str | None = None
    stop_reason: Literal["rejected"] | None = None  # the last run ended because the user stopped it at a call
    # A session opened from its index: how to read its messages, and how many there are.
    _read_messages: Callable[[], None] | None = attrs.field(default=None, init=False)
    _message_count: int = attrs.field(default=0, init=False)

    @property
    def messages(self) -> list[Any]:
        """The transcript; a stored session's is read from its file when first asked for."""
        if self._read_messages is not None:
            self._read_messages()  # sets messages
            self._read_messages = None
        return self._messages

    @messages.setter
    def messages(self, value: list[Any]) -> None:
        self._messages = value
        self._read_messages = None

    def defer_messages(self, read: Callable[[], None], count: int) -> None:
        """``read`` sets the ``count`` messages of the transcript when they are first asked for."""
        self._read_messages, self._message_count = read, count

    @property
    def deferred(self) -> bool:
        """The messages are still to be read (:meth:`defer_messages`)."""
        return self._read_messages is not None

    @property
    def message_count(self) -> int:
        return self._message_count if self._read_messages is not None else len(self._messages)
