"""``openai-completions``: ``POST {baseUrl}/chat/completions`` streamed as SSE.

Works with OpenAI and with the servers that speak its chat-completions dialect (Ollama,
llama.cpp, vLLM, LM Studio, OpenRouter). Differences between them are chosen by the
model's ``compat`` settings, defaulting by base URL.
"""

from __future__ import annotations

import json
import weakref
from typing import Any, AsyncIterator, Sequence

from ..cancel import CancelToken
from ..events import AssistantMessageDelta, AssistantMessageEvent
from ..json_types import JsonObject, JsonValue
from ..messages import (
    AssistantMessage,
    ImageContent,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from .cost import apply_cost
from .errors import ProviderErrorDetail, classify
from .http import Encoded, client_for, encode_json, sse_stream
from .local_server import check_tool_support
from .model import Context, Model, StreamOptions
from .sent_prefix import encode_history
from .sse_run import SseRun
from .tool_images import images_after_tool_results
from .stream import BlockStartEvent, ErrorReason, StreamBuilder, register_api

API = "openai-completions"

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}

EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}


def compat(model: Model, key: str) -> Any:
    values = model.compat or {}
    if key in values:
        return values[key]
    official = "api.openai.com" in model.base_url
    defaults = {
        "maxTokensField": "max_completion_tokens" if official else "max_tokens",
        "supportsDeveloperRole": official,
        "supportsUsageInStreaming": True,
        "supportsReasoningEffort": official,
        "thinkingFormat": "openrouter" if "openrouter.ai" in model.base_url else "openai",
        "requiresToolResultName": False,
    }
    return defaults.get(key)


def _user_content(content: str | list[UserContent], model: Model) -> str | list[JsonObject]:
    if isinstance(content, str):
        return content
    parts: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent):
            if "image" in model.input:
                url = f"data:{block.mime_type};base64,{block.data}"
                parts.append({"type": "image_url", "image_url": {"url": url}})
            else:
                parts.append({"type": "text", "text": "(an image was omitted: this model takes no images)"})
    return parts


def _convert_one(message: Any, model: Model) -> JsonObject | None:
    """The wire form of one message (None: nothing to send)."""
    if isinstance(message, UserMessage):
        return {"role": "user", "content": _user_content(message.content, model)}
    if isinstance(message, AssistantMessage):
        text = "".join(b.text for b in message.content if isinstance(b, TextContent))
        out: dict[str, Any] = {"role": "assistant", "content": text or None}
        calls = message.tool_calls()
        if calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                for c in calls
            ]
        if out["content"] is None and not calls:
            return None
        if out["content"] is None and compat(model, "requiresNonNullAssistantContent"):
            out["content"] = ""
        return out
    if isinstance(message, ToolResultMessage):
        text = "".join(b.text for b in message.content if isinstance(b, TextContent))
        out = {"role": "tool", "tool_call_id": message.tool_call_id, "content": text or "(no output)"}
        if compat(model, "requiresToolResultName"):
            out["name"] = message.tool_name
        return out
    return None


def _shape(model: Model) -> tuple[Any, ...]:
    """What a message's wire form depends on besides the message."""
    return (bool(compat(model, "requiresNonNullAssistantContent")), bool(compat(model, "requiresToolResultName")),
            tuple(model.input))


# Messages already sent, encoded once: a long session's request then costs a copy of each
# message's bytes, not a conversion and encoding of the whole history on every turn. Messages
# are not changed once they are in the context; an entry lives as long as its message.
_encoded: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], Encoded | None]] = {}


def _encode_one(message: Any, model: Model, shape: tuple[Any, ...]) -> Encoded | None:
    hit = _encoded.get(id(message))
    if hit is not None and hit[0]() is message and hit[1] == shape:
        return hit[2]
    converted = _convert_one(message, model)
    # A copy: orjson's result keeps a spare buffer, which a kept message should not hold.
    encoded = None if converted is None else Encoded(bytes(memoryview(encode_json(converted))))
    key = id(message)
    try:
        ref = weakref.ref(message, lambda _ref: _encoded.pop(key, None))
    except TypeError:  # not weakly referenceable: not kept
        return encoded
    _encoded[key] = (ref, shape, encoded)
    return encoded


def _system(model: Model, context: Context) -> list[dict[str, Any]]:
    if not context.system_prompt:
        return []
    role = "developer" if model.reasoning and compat(model, "supportsDeveloperRole") else "system"
    return [{"role": role, "content": context.system_prompt}]


def convert_messages(model: Model, context: Context) -> list[Any]:
    """The request's ``messages``."""
    converted = (_convert_one(m, model) for m in images_after_tool_results(context.messages))
    return _system(model, context) + [m for m in converted if m is not None]


def _encoded_messages(model: Model, context: Context) -> Encoded:
    """The request's ``messages`` as one JSON array: the history sent before is a copy of
    bytes (:mod:`.sent_prefix`), each new message is encoded once (:func:`_encode_one`)."""
    shape = _shape(model)

    def encode(messages: Sequence[Any]) -> bytes:
        parts = (_encode_one(m, model, shape) for m in images_after_tool_results(list(messages)))
        return b",".join(p.raw for p in parts if p is not None)

    parts = [encode_json(m) for m in _system(model, context)] + encode_history(context.messages, shape, encode)
    # One join, one copy of the history: the whole array, commas and brackets included.
    pieces: list[bytes | bytearray] = [b"["]
    for part in parts:
        pieces += (part, b",")
    if parts:
        pieces.pop()
    pieces.append(b"]")
    return Encoded(b"".join(pieces))


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "messages": _encoded_messages(model, context),
        "stream": True,
    }
    if compat(model, "supportsUsageInStreaming"):
        body["stream_options"] = {"include_usage": True}
    body[compat(model, "maxTokensField")] = options.max_tokens or model.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [
            {"type": "function",
             "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
            for t in context.tools
        ]
    elif compat(model, "requiresToolsWithToolHistory") and any(
            isinstance(m, ToolResultMessage) for m in context.messages):
        body["tools"] = []
    if model.reasoning:
        _thinking(model, options, body)
    return body


def _thinking(model: Model, options: StreamOptions, body: dict[str, Any]) -> None:
    """The thinking level in the dialect ``compat.thinkingFormat`` names."""
    on = options.thinking_level != "off"
    effort = EFFORT.get(options.thinking_level)
    fmt = compat(model, "thinkingFormat")
    if fmt == "qwen":
        body["enable_thinking"] = on
    elif fmt == "qwen-chat-template":
        body["chat_template_kwargs"] = {"enable_thinking": on, "preserve_thinking": True}
    elif fmt in ("deepseek", "zai"):
        body["thinking"] = {"type": "enabled" if on else "disabled"}
    elif not on:
        return
    elif fmt == "openrouter":
        body["reasoning"] = {"effort": effort}
    elif compat(model, "supportsReasoningEffort"):
        body["reasoning_effort"] = effort
    if on and compat(model, "thinkingTokenBudgetField"):
        body[compat(model, "thinkingTokenBudgetField")] = THINKING_BUDGETS[options.thinking_level]


def headers_for(model: Model, options: StreamOptions) -> dict[str, str]:
    headers = dict(model.headers or {})
    if options.api_key:
        headers["authorization"] = f"Bearer {options.api_key}"
    headers.update(options.headers or {})
    return headers


class _ChunkReader:
    """Turns chat-completion chunks into builder events."""

    def __init__(self, builder: StreamBuilder) -> None:
        self.b = builder
        self.text_index: int | None = None
        self.thinking_index: int | None = None
        self.calls: dict[int, int] = {}  # stream index -> content index
        self.ids: dict[int, str | None] = {}  # stream index -> the call id the server gave
        self.finish: str | None = None
        self.usage: JsonObject | None = None
        self.timings: JsonObject | None = None
        self.error: tuple[str, ErrorReason, ProviderErrorDetail] | None = None  # an error event in the stream

    def _position(self, call: JsonObject) -> int:
        """The call a delta belongs to: its ``index``; without one (some servers), the call
        with its ``id``, a new call for a new id, else the latest call."""
        index = call.get("index")
        if isinstance(index, int):
            return index
        if call.get("id"):
            for position, known in self.ids.items():
                if known == call["id"]:
                    return position
            return max(self.calls, default=-1) + 1
        return max(self.calls, default=0)

    def _close_text(self, out: list[AssistantMessageDelta]) -> None:
        if self.text_index is not None:
            out.append(self.b.text_end(self.text_index))
            self.text_index = None

    def _close_thinking(self, out: list[AssistantMessageDelta]) -> None:
        if self.thinking_index is not None:
            out.append(self.b.thinking_end(self.thinking_index))
            self.thinking_index = None

    def close_all(self) -> list[AssistantMessageDelta]:
        out: list[AssistantMessageDelta] = []
        self._close_thinking(out)
        self._close_text(out)
        for index in sorted(self.calls.values()):
            out.append(self.b.toolcall_end(index))
        self.calls.clear()
        return out

    def chunk(self, data: JsonValue) -> list[AssistantMessageDelta]:
        out: list[AssistantMessageDelta] = []
        start: BlockStartEvent
        if isinstance(data, dict) and data.get("error"):
            error = data["error"]  # an error after the 200: the server's own status in it
            text = error.get("message", str(error)) if isinstance(error, dict) else str(error)
            code = error.get("code") if isinstance(error, dict) else None
            self.error = (text, "error", classify(code if isinstance(code, int) else None, text))
            return out
        if data.get("usage"):
            self.usage = data["usage"]
        if isinstance(data.get("timings"), dict):  # llama.cpp's own counts
            self.timings = data["timings"]
        for choice in data.get("choices") or []:
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                if self.thinking_index is None:
                    start = self.b.thinking_start()
                    out.append(start)
                    self.thinking_index = start.content_index
                out.append(self.b.thinking_delta(self.thinking_index, reasoning))
            content = delta.get("content")
            if isinstance(content, str) and content:  # the common chunk: a text delta
                if self.thinking_index is not None:
                    self._close_thinking(out)
                index = self.text_index
                if index is None:
                    start = self.b.text_start()
                    out.append(start)
                    index = self.text_index = start.content_index
                out.append(self.b.text_delta(index, content))
            for call in delta.get("tool_calls") or []:
                self._close_thinking(out)
                self._close_text(out)
                position = self._position(call)
                function = call.get("function") or {}
                if position not in self.calls:
                    start = self.b.toolcall_start(call.get("id") or f"call_{position}", function.get("name") or "")
                    out.append(start)
                    self.calls[position] = start.content_index
                    self.ids[position] = call.get("id")
                index = self.calls[position]
                block = self.b.block(index, ToolCall)
                if call.get("id") and not self.ids.get(position):  # the id came after the first delta
                    block.id = self.ids[position] = call["id"]
                if function.get("name") and not block.name:
                    block.name = function["name"]
                if function.get("arguments"):
                    out.append(self.b.toolcall_delta(index, function["arguments"]))
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return out


def _usage(model: Model, raw: JsonObject | None, timings: JsonObject | None = None) -> Usage:
    if not raw and timings:  # llama.cpp without usage in the stream
        return apply_cost(model, Usage(input=timings.get("prompt_n") or 0, output=timings.get("predicted_n") or 0,
                                       cache_read=timings.get("cache_n") or 0))
    if not raw:
        return Usage()
    cached = (raw.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    prompt = raw.get("prompt_tokens") or 0
    return apply_cost(model, Usage(input=max(0, prompt - cached), output=raw.get("completion_tokens") or 0,
                                   cache_read=cached))


async def stream_openai_completions(
    model: Model, context: Context, options: StreamOptions, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    builder = StreamBuilder(model)
    reader = _ChunkReader(builder)
    yield builder.start()
    url = model.base_url.rstrip("/") + "/chat/completions"
    if context.tools:
        check_tool_support(model, client_for(model))
    run = SseRun()
    source = sse_stream(model, url, headers_for(model, options), build_body(model, context, options), cancel)
    async for event in run.events(source, reader.chunk, lambda: reader.error is not None):
        yield event
    for event in reader.close_all():
        yield event
    builder.output.usage = _usage(model, reader.usage, reader.timings)
    failed = run.failed or reader.error
    if failed:
        text, reason, detail = failed
        yield builder.error(text, reason, detail)
        return
    if reader.finish is None and compat(model, "supportsFinishReason") is False:
        reader.finish = "stop"  # the server never says; stop or toolUse by what arrived
    if reader.finish is None:
        yield builder.error("the stream ended without a finish reason (the answer may be incomplete)",
                            detail=ProviderErrorDetail(retryable=True))
        return
    stop = FINISH_REASONS.get(reader.finish, "stop")
    if stop == "error":
        yield builder.error(f"the provider stopped the answer: finish_reason {reader.finish}")
        return
    if stop == "stop" and builder.output.tool_calls():
        stop = "toolUse"
    yield builder.done(stop)


register_api(API, stream_openai_completions)
