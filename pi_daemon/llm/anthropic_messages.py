"""``anthropic-messages``: ``POST {baseUrl}/v1/messages`` streamed as SSE.

Text, thinking (its signature kept for replay), redacted thinking and tool use with
streamed ``input_json_delta``; usage from ``message_start`` and ``message_delta``
including cache reads and writes; prompt caching of the system prompt and the last user
turn; thinking levels mapped to token budgets.
"""

from __future__ import annotations

import json
import re
from typing import Any, AsyncIterator

import attrs

from ..cancel import CancelToken, Cancelled
from ..events import AssistantMessageDelta, AssistantMessageEvent
from ..json_types import JsonObject
from ..messages import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from .cost import apply_cost
from .errors import ProviderErrorDetail, classify
from .http import failure, sse_stream
from .model import Context, Model, StreamOptions
from .stream import BlockStartEvent, ErrorReason, StreamBuilder, register_api

API = "anthropic-messages"
VERSION = "2023-06-01"

STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "error",
}

THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
CACHE = {"type": "ephemeral"}


def _tool_id(call_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", call_id)[:64] or "tool"


def _blocks(content: str | list[UserContent], model: Model) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    out: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent) and block.text:
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            if "image" in model.input:
                out.append({"type": "image", "source": {"type": "base64", "media_type": block.mime_type,
                                                        "data": block.data}})
            else:
                out.append({"type": "text", "text": "(an image was omitted: this model takes no images)"})
    return out


def _assistant_blocks(message: AssistantMessage) -> list[JsonObject]:
    own = message.api == API
    out: list[JsonObject] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if own and block.redacted and block.thinking_signature:
                out.append({"type": "redacted_thinking", "data": block.thinking_signature})
            elif own and block.thinking_signature:
                out.append({"type": "thinking", "thinking": block.thinking, "signature": block.thinking_signature})
            # thinking from another provider cannot be replayed; it is left out
        elif isinstance(block, TextContent) and block.text:
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCall):
            out.append({"type": "tool_use", "id": _tool_id(block.id), "name": block.name, "input": block.arguments})
    return out


def convert_messages(model: Model, context: Context) -> list[JsonObject]:
    turns: list[JsonObject] = []

    def add(role: str, blocks: list[JsonObject]) -> None:
        if not blocks:
            return
        if turns and turns[-1]["role"] == role:  # one turn per role, alternating
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for message in context.messages:
        if isinstance(message, UserMessage):
            add("user", _blocks(message.content, model))
        elif isinstance(message, AssistantMessage):
            add("assistant", _assistant_blocks(message))
        elif isinstance(message, ToolResultMessage):
            add("user", [{"type": "tool_result", "tool_use_id": _tool_id(message.tool_call_id),
                          "content": _blocks(message.content, model) or [{"type": "text", "text": "(no output)"}],
                          "is_error": message.is_error}])
    for turn in reversed(turns):  # cache everything up to the last user turn
        if turn["role"] == "user":
            turn["content"][-1] = {**turn["content"][-1], "cache_control": CACHE}
            break
    return turns


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    max_tokens = options.max_tokens or model.max_tokens
    body: dict[str, Any] = {
        "model": model.id,
        "messages": convert_messages(model, context),
        "max_tokens": max_tokens,
        "stream": True,
    }
    if context.system_prompt:
        body["system"] = [{"type": "text", "text": context.system_prompt, "cache_control": CACHE}]
    if context.tools:
        body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                         for t in context.tools]
    if model.reasoning and options.thinking_level != "off":
        budget = THINKING_BUDGETS[options.thinking_level]
        if budget >= max_tokens:
            budget = max(1024, max_tokens - 1024)
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    elif options.temperature is not None:
        body["temperature"] = options.temperature
    return body


def headers_for(model: Model, options: StreamOptions) -> dict[str, str]:
    headers = {"anthropic-version": VERSION, **(model.headers or {})}
    if options.api_key:
        headers["x-api-key"] = options.api_key
        if model.auth_header:
            headers["authorization"] = f"Bearer {options.api_key}"
    headers.update(options.headers or {})
    return headers


class _EventReader:
    def __init__(self, model: Model, builder: StreamBuilder) -> None:
        self.model = model
        self.b = builder
        self.blocks: dict[int, tuple[str, int]] = {}  # stream index -> (kind, content index)
        self.usage = Usage()
        self.stop: str | None = None
        self.error: str | None = None
        self.finished = False

    def close_all(self) -> list[AssistantMessageDelta]:
        out = [self._end(i) for i in sorted(self.blocks)]
        self.blocks.clear()
        return [e for e in out if e is not None]

    def _end(self, stream_index: int) -> AssistantMessageDelta:
        kind, index = self.blocks[stream_index]
        if kind == "text":
            return self.b.text_end(index)
        if kind == "thinking":
            return self.b.thinking_end(index)
        return self.b.toolcall_end(index)

    def event(self, data: JsonObject) -> list[AssistantMessageDelta]:
        kind = data.get("type")
        if kind == "message_start":
            usage = (data.get("message") or {}).get("usage") or {}
            self.usage.input = usage.get("input_tokens") or 0
            self.usage.output = usage.get("output_tokens") or 0
            self.usage.cache_read = usage.get("cache_read_input_tokens") or 0
            self.usage.cache_write = usage.get("cache_creation_input_tokens") or 0
            self.b.output.usage = apply_cost(self.model, attrs.evolve(self.usage))  # known mid-stream from here
        elif kind == "content_block_start":
            return self._start(data.get("index", 0), data.get("content_block") or {})
        elif kind == "content_block_delta":
            return self._delta(data.get("index", 0), data.get("delta") or {})
        elif kind == "content_block_stop":
            index = data.get("index", 0)
            if index in self.blocks:
                event = self._end(index)
                del self.blocks[index]
                return [event]
        elif kind == "message_delta":
            self.stop = (data.get("delta") or {}).get("stop_reason") or self.stop
            usage = data.get("usage") or {}
            if "output_tokens" in usage:
                self.usage.output = usage["output_tokens"]
            for field, key in (("input", "input_tokens"), ("cache_read", "cache_read_input_tokens"),
                               ("cache_write", "cache_creation_input_tokens")):
                if usage.get(key) is not None:
                    setattr(self.usage, field, usage[key])
        elif kind == "message_stop":
            self.finished = True
        elif kind == "error":
            error = data.get("error") or {}
            self.error = f"{error.get('type', 'error')}: {error.get('message', 'unknown error')}"
        return []

    def _start(self, stream_index: int, block: JsonObject) -> list[AssistantMessageDelta]:
        kind = block.get("type")
        start: BlockStartEvent
        if kind == "text":
            start = self.b.text_start()
            self.blocks[stream_index] = ("text", start.content_index)
            out: list[AssistantMessageDelta] = [start]
            if block.get("text"):
                out.append(self.b.text_delta(start.content_index, block["text"]))
            return out
        if kind in ("thinking", "redacted_thinking"):
            start = self.b.thinking_start(redacted=True if kind == "redacted_thinking" else None)
            self.blocks[stream_index] = ("thinking", start.content_index)
            if kind == "redacted_thinking":
                self.b.thinking_signature(start.content_index, block.get("data", ""))
            return [start]
        if kind in ("tool_use", "server_tool_use"):
            start = self.b.toolcall_start(block.get("id", f"toolu_{stream_index}"), block.get("name", ""))
            self.blocks[stream_index] = ("tool", start.content_index)
            return [start]
        return []

    def _delta(self, stream_index: int, delta: JsonObject) -> list[AssistantMessageDelta]:
        if stream_index not in self.blocks:
            return []
        _, index = self.blocks[stream_index]
        kind = delta.get("type")
        if kind == "text_delta":
            return [self.b.text_delta(index, delta.get("text", ""))]
        if kind == "thinking_delta":
            return [self.b.thinking_delta(index, delta.get("thinking", ""))]
        if kind == "signature_delta":
            self.b.thinking_signature(index, delta.get("signature", ""))
        elif kind == "input_json_delta" and delta.get("partial_json"):
            return [self.b.toolcall_delta(index, delta["partial_json"])]
        return []


async def stream_anthropic_messages(
    model: Model, context: Context, options: StreamOptions, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    builder = StreamBuilder(model)
    reader = _EventReader(model, builder)
    yield builder.start()
    url = model.base_url.rstrip("/") + "/v1/messages"
    text: str | None
    detail: ProviderErrorDetail | None
    reason: ErrorReason
    try:
        async for sse in sse_stream(model, url, headers_for(model, options), build_body(model, context, options), cancel):
            if not sse.data.strip():
                continue
            for event in reader.event(json.loads(sse.data)):
                yield event
            if reader.error or reader.finished:
                break
    except Cancelled:
        text, detail, reason = "Request was aborted", None, "aborted"
    except Exception as exc:  # noqa: BLE001 - every failure becomes the message's error
        text, detail = failure(exc)
        reason = "error"
    else:
        if reader.error:
            text, detail, reason = reader.error, classify(None, reader.error), "error"
        elif not reader.finished and reader.stop is None:
            text, detail, reason = "the stream ended before message_stop (the answer may be incomplete)", None, "error"
        else:
            text = None
    for event in reader.close_all():
        yield event
    builder.output.usage = apply_cost(model, reader.usage)
    if text is not None:
        if reason == "error" and detail is None:
            detail = classify(None, "connection lost")
        yield builder.error(text, reason, detail)
        return
    stop = STOP_REASONS.get(reader.stop or "end_turn", "stop")
    if stop == "error":
        yield builder.error(f"the model declined to answer (stop_reason: {reader.stop})")
        return
    yield builder.done(stop)


register_api(API, stream_anthropic_messages)
