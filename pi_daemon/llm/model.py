"""What a provider is given: the model, the context of one request, and request options."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ..messages import LlmMessage

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


@attrs.define
class ModelCost:
    """USD per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


@attrs.define
class Model:
    id: str
    provider: str
    api: str
    name: str | None = None
    base_url: str = ""
    reasoning: bool = False
    input: list[str] = attrs.field(factory=lambda: ["text"])
    cost: ModelCost = attrs.field(factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | None = None
    compat: dict[str, Any] | None = None
    auth_header: bool = False  # also send the key as ``Authorization: Bearer`` (models.json ``authHeader``)
    connect_timeout: float = 10.0  # seconds to establish the connection
    read_timeout: float = 300.0  # seconds a stream may stay silent (reasoning models think quietly)
    max_answer_bytes: int = 64 << 20  # what one streamed answer may bring (decoded), models.json maxAnswerBytes

    @property
    def spec(self) -> str:
        return f"{self.provider}/{self.id}"


@attrs.define
class ToolSpec:
    """A tool as the model is told about it."""

    name: str
    description: str
    parameters: dict[str, Any]


@attrs.define
class Context:
    """Everything one model request is built from (already converted for the model)."""

    system_prompt: str = ""
    messages: list[LlmMessage] = attrs.field(factory=list)
    tools: list[ToolSpec] = attrs.field(factory=list)


@attrs.define
class StreamOptions:
    api_key: str | None = None
    thinking_level: ThinkingLevel = "off"
    max_tokens: int | None = None
    temperature: float | None = None
    session_id: str | None = None
    headers: dict[str, str] | None = None
