"""``openai-completions``: ``POST {baseUrl}/chat/completions`` streamed as SSE.

Works with OpenAI and with the servers that speak its chat-completions dialect (Ollama,
llama.cpp, vLLM, LM Studio, OpenRouter). Differences between them are chosen by the
model's ``compat`` settings, defaulting by base URL.
"""

from __future__ import annotations

import json
import weakref
from typing import Any, AsyncIterator

from ..cancel import CancelToken, Cancelled
from ..events import AssistantMessageEvent
from ..messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .cost import apply_cost
from .errors import ProviderErrorDetail, overflow_text
from .http import Encoded, encode_json, failure, sse_stream
from .model import Context, Model, StreamOptions
from .stream import StreamBuilder, register_api

API = "openai-completions"

FINISH_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "error",
}

EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}


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


def _user_content(content, model: Model) -> str | list[dict]:
    if isinstance(content, str):
        return content
    parts: list[dict] = []
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


def _has_images(message: Any) -> bool:
    content = getattr(message, "content", None)
    return isinstance(content, list) and any(isinstance(b, ImageContent) for b in content)


def _convert_one(message: Any, model: Model, tool_result_name: bool) -> dict | None:
    """The wire form of a message that carries no images (None: nothing to send)."""
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
        return out
    if isinstance(message, ToolResultMessage):
        return _tool_result(message, "".join(b.text for b in message.content if isinstance(b, TextContent)),
                            tool_result_name)
    return None


def _tool_result(message: ToolResultMessage, text: str, tool_result_name: bool) -> dict:
    out = {"role": "tool", "tool_call_id": message.tool_call_id, "content": text or "(no output)"}
    if tool_result_name:
        out["name"] = message.tool_name
    return out


# Messages already sent, encoded once: a long session's request then costs a copy of each
# message's bytes, not a conversion and encoding of the whole history on every turn. History
# messages are not changed once they are in the context; an entry lives as long as its message.
_encoded: dict[int, tuple[weakref.ref, bool, Encoded | None]] = {}


def _encode_one(message: Any, model: Model, tool_result_name: bool) -> Encoded | None:
    """The wire form of a message without images, encoded and kept (None: nothing to send)."""
    converted = _convert_one(message, model, tool_result_name)
    # A copy: orjson's result keeps a buffer of several KB, which a kept message should not hold.
    encoded = None if converted is None else Encoded(bytes(memoryview(encode_json(converted))))
    key = id(message)
    try:
        ref = weakref.ref(message, lambda _ref, key=key: _encoded.pop(key, None))
    except TypeError:  # not weakly referenceable: not kept
        return encoded
    _encoded[key] = (ref, tool_result_name, encoded)
    return encoded


def convert_messages(model: Model, context: Context, *, encoded: bool = False) -> list[Any]:
    """The request's ``messages``; with ``encoded``, messages without images come already encoded."""
    messages: list[Any] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and compat(model, "supportsDeveloperRole") else "system"
        messages.append({"role": role, "content": context.system_prompt})
    tool_result_name = bool(compat(model, "requiresToolResultName"))
    pending_images: list[ImageContent] = []
    for message in context.messages:
        if encoded and not pending_images:
            hit = _encoded.get(id(message))
            if hit is not None and hit[0]() is message and hit[1] == tool_result_name:
                if hit[2] is not None:
                    messages.append(hit[2])
                continue
        if not isinstance(message, ToolResultMessage) and pending_images:
            messages.append({"role": "user", "content": _user_content(
                [TextContent(text="Images returned by the tool calls above:"), *pending_images], model)})
            pending_images = []
        if isinstance(message, ToolResultMessage) and _has_images(message):
            text = "".join(b.text for b in message.content if isinstance(b, TextContent))
            out = _tool_result(message, text + "\n(the images are attached in the next message)", tool_result_name)
            pending_images.extend(b for b in message.content if isinstance(b, ImageContent))
        elif encoded and not _has_images(message):
            out = _encode_one(message, model, tool_result_name)
        else:
            out = _convert_one(message, model, tool_result_name)
        if out is not None:
            messages.append(out)
    if pending_images:
        messages.append({"role": "user", "content": _user_content(pending_images, model)})
    return messages


def _joined(items: list[Any]) -> Encoded:
    """One JSON array of already-encoded parts: a copy of bytes, whatever the history's length."""
    return Encoded(b"[" + b",".join(i.raw if isinstance(i, Encoded) else encode_json(i) for i in items) + b"]")


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": model.id,
        "messages": _joined(convert_messages(model, context, encoded=True)),
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
    if model.reasoning and options.thinking_level != "off":
        effort = EFFORT[options.thinking_level]
        if compat(model, "thinkingFormat") == "openrouter":
            body["reasoning"] = {"effort": effort}
        elif compat(model, "supportsReasoningEffort"):
            body["reasoning_effort"] = effort
    return body


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
        self.finish: str | None = None
        self.usage: dict | None = None

    def _close_text(self, out: list) -> None:
        if self.text_index is not None:
            out.append(self.b.text_end(self.text_index))
            self.text_index = None

    def _close_thinking(self, out: list) -> None:
        if self.thinking_index is not None:
            out.append(self.b.thinking_end(self.thinking_index))
            self.thinking_index = None

    def close_all(self) -> list:
        out: list = []
        self._close_thinking(out)
        self._close_text(out)
        for index in sorted(self.calls.values()):
            out.append(self.b.toolcall_end(index))
        self.calls.clear()
        return out

    def chunk(self, data: dict) -> list:
        out: list = []
        if data.get("usage"):
            self.usage = data["usage"]
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
            if isinstance(content, str) and content:
                self._close_thinking(out)
                if self.text_index is None:
                    start = self.b.text_start()
                    out.append(start)
                    self.text_index = start.content_index
                out.append(self.b.text_delta(self.text_index, content))
            for call in delta.get("tool_calls") or []:
                self._close_thinking(out)
                self._close_text(out)
                position = call.get("index", len(self.calls))
                function = call.get("function") or {}
                if position not in self.calls:
                    start = self.b.toolcall_start(call.get("id") or f"call_{position}", function.get("name") or "")
                    out.append(start)
                    self.calls[position] = start.content_index
                index = self.calls[position]
                if function.get("name") and not self.b.output.content[index].name:
                    self.b.output.content[index].name = function["name"]
                if function.get("arguments"):
                    out.append(self.b.toolcall_delta(index, function["arguments"]))
            if choice.get("finish_reason"):
                self.finish = choice["finish_reason"]
        return out


def _usage(model: Model, raw: dict | None) -> Usage:
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
    try:
        async for sse in sse_stream(model, url, headers_for(model, options), build_body(model, context, options), cancel):
            if sse.data.strip() == "[DONE]":
                break
            if not sse.data.strip():
                continue
            data = json.loads(sse.data)
            if isinstance(data, dict) and data.get("error"):
                error = data["error"]
                text = error.get("message", str(error)) if isinstance(error, dict) else str(error)
                for event in reader.close_all():
                    yield event
                yield builder.error(text, detail=ProviderErrorDetail(overflow=overflow_text(text)))
                return
            for event in reader.chunk(data):
                yield event
    except Cancelled:
        for event in reader.close_all():
            yield event
        builder.output.usage = _usage(model, reader.usage)
        yield builder.error("Request was aborted", "aborted")
        return
    except Exception as exc:  # noqa: BLE001 - every failure becomes the message's error
        text, detail = failure(exc)
        for event in reader.close_all():
            yield event
        builder.output.usage = _usage(model, reader.usage)
        yield builder.error(text, detail=detail)
        return
    for event in reader.close_all():
        yield event
    builder.output.usage = _usage(model, reader.usage)
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
