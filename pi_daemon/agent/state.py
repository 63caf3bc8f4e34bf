"""What an agent holds between and during runs: model, system prompt, tools, the transcript."""

from __future__ import annotations

from typing import Any

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
    messages: list[Any] = attrs.field(factory=list)
    is_streaming: bool = False
    streaming_message: AssistantMessage | None = None
    pending_tool_calls: set[str] = attrs.field(factory=set)
    error: str | None = None
