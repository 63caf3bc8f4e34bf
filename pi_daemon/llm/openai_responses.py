"""``openai-responses``: ``POST {baseUrl}/responses`` streamed as SSE (OpenAI's Responses API).

Each SSE event names itself (``response.output_text.delta``, ...); the answer is a list of
output items — ``reasoning``, ``message``, ``function_call`` — opened by
``response.output_item.added``, filled by deltas and closed by ``response.output_item.done``.
The stream ends with ``response.completed``, ``response.incomplete`` or ``response.failed``
(or an ``error`` event); there is no ``[DONE]``.

Requests are not stored at OpenAI (``store: false``), so a reasoning model's reasoning is
asked for encrypted (``include: ["reasoning.encrypted_content"]``): the whole reasoning item
is kept as the thinking block's signature and sent back on the next turn, which lets the
model continue its reasoning across tool calls. A tool call's id is ``call_id|item_id``;
a message's text signature is its item id.
"""

from __future__ import annotations

import json
from typing import Any, AsyncIterator, Callable, Literal

from ..cancel import CancelToken
from ..events import AssistantMessageDelta, AssistantMessageEvent
from ..json_types import JsonObject
from ..messages import AssistantMessage, ImageContent, StopReason, TextContent, ThinkingContent, ToolCall, \
    ToolResultMessage, Usage, UserContent, UserMessage
from .cost import apply_cost
from .errors import ProviderErrorDetail, classify, overflow_text
from .http import sse_stream
from .model import Context, Model, StreamOptions
from .sse_run import SseRun
from .tool_images import images_after_tool_results
from .stream import BlockStartEvent, StreamBuilder, register_api

API = "openai-responses"
EFFORT = {"minimal": "minimal", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
OVERFLOW_CODES = {"context_length_exceeded"}
RETRYABLE_CODES = {"server_error", "rate_limit_exceeded", "server_is_overloaded", "slow_down"}


def _compat(model: Model, key: str, default: Any) -> Any:
    return (model.compat or {}).get(key, default)


def _user_content(content: str | list[UserContent], model: Model) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    parts: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "input_text", "text": block.text})
        elif isinstance(block, ImageContent):
            if "image" in model.input:
                parts.append({"type": "input_image", "detail": "auto",
                              "image_url": f"data:{block.mime_type};base64,{block.data}"})
            else:
                parts.append({"type": "input_text", "text": "(an image was omitted: this model takes no images)"})
    return parts


def _assistant_items(message: AssistantMessage, model: Model) -> list[JsonObject]:
    own = message.api == API and message.provider == model.provider
    items: list[JsonObject] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if own and block.thinking_signature:
                try:
                    items.append(json.loads(block.thinking_signature))  # the reasoning item, encrypted
                except ValueError:
                    pass
        elif isinstance(block, TextContent) and block.text:
            item: JsonObject = {"type": "message", "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}]}
            if own and block.text_signature:
                item["id"] = block.text_signature
            items.append(item)
        elif isinstance(block, ToolCall):
            call_id, _, item_id = block.id.partition("|")
            item = {"type": "function_call", "call_id": call_id, "name": block.name,
                    "arguments": json.dumps(block.arguments)}
            if own and item_id:
                item["id"] = item_id
            items.append(item)
    return items


def convert_input(model: Model, context: Context) -> list[JsonObject]:
    items: list[JsonObject] = []
    if context.system_prompt:
        role = "developer" if model.reasoning and _compat(model, "supportsDeveloperRole", True) else "system"
        items.append({"role": role, "content": context.system_prompt})
    for message in images_after_tool_results(context.messages):
        if isinstance(message, UserMessage):
            items.append({"role": "user", "content": _user_content(message.content, model)})
        elif isinstance(message, AssistantMessage):
            items += _assistant_items(message, model)
        elif isinstance(message, ToolResultMessage):
            text = "".join(b.text for b in message.content if isinstance(b, TextContent))
            items.append({"type": "function_call_output", "call_id": message.tool_call_id.partition("|")[0],
                          "output": text or "(no output)"})
    return items


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model.id, "input": convert_input(model, context), "stream": True, "store": False}
    if _compat(model, "supportsMaxOutputTokens", True):
        body["max_output_tokens"] = options.max_tokens or model.max_tokens
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                          "parameters": t.parameters, "strict": False} for t in context.tools]
    if model.reasoning:
        body["include"] = ["reasoning.encrypted_content"]
        if options.thinking_level != "off":
            body["reasoning"] = {"effort": EFFORT[options.thinking_level], "summary": "auto"}
    if options.session_id and _compat(model, "promptCacheKeyMode", "auto") != "disabled":
        body["prompt_cache_key"] = options.session_id
    return body


def headers_for(model: Model, options: StreamOptions) -> dict[str, str]:
    headers = dict(model.headers or {})
    if options.api_key:
        headers["authorization"] = f"Bearer {options.api_key}"
    headers.update(options.headers or {})
    return headers


def _usage(model: Model, raw: JsonObject | None) -> Usage:
    if not raw:
        return Usage()
    cached = (raw.get("input_tokens_details") or {}).get("cached_tokens") or 0
    # output_tokens already counts the reasoning tokens (output_tokens_details.reasoning_tokens)
    return apply_cost(model, Usage(input=max(0, (raw.get("input_tokens") or 0) - cached),
                                   output=raw.get("output_tokens") or 0, cache_read=cached))


def _error_detail(code: str | None, text: str) -> ProviderErrorDetail:
    detail = classify(None, text)
    if code in OVERFLOW_CODES or overflow_text(text):
        detail.overflow, detail.retryable = True, False
    elif code in RETRYABLE_CODES:
        detail.retryable = True
    return detail


class _EventReader:
    """Turns Responses stream events into builder events."""

    def __init__(self, builder: StreamBuilder) -> None:
        self.b = builder
        self.blocks: dict[int, tuple[str, int]] = {}  # output_index -> (item type, content index)
        self.args_seen: set[int] = set()
        self.summary_parts: dict[int, int] = {}
        # ("done", stop) or ("error", (text, detail))
        self.outcome: tuple[Literal["done"], StopReason] | tuple[Literal["error"], tuple[str, ProviderErrorDetail]] \
            | None = None
        self.usage: JsonObject | None = None

    def close_all(self) -> list[AssistantMessageDelta]:
        out: list[AssistantMessageDelta] = []
        ends: dict[str, Callable[[int], AssistantMessageDelta]] = {
            "reasoning": self.b.thinking_end, "message": self.b.text_end, "function_call": self.b.toolcall_end}
        for kind, index in self.blocks.values():
            out.append(ends[kind](index))
        self.blocks.clear()
        return out

    def event(self, data: JsonObject) -> list[AssistantMessageDelta]:
        kind = data.get("type", "")
        handler: Callable[[JsonObject], list[AssistantMessageDelta]] | None = \
            getattr(self, "_" + kind.replace(".", "_"), None)
        return handler(data) if handler else []

    def _response_output_item_added(self, data: JsonObject) -> list[AssistantMessageDelta]:
        item, position = data.get("item") or {}, data.get("output_index", len(self.blocks))
        start: BlockStartEvent
        if item.get("type") == "reasoning":
            start = self.b.thinking_start()
        elif item.get("type") == "message":
            start = self.b.text_start()
        elif item.get("type") == "function_call":
            start = self.b.toolcall_start(f"{item.get('call_id', '')}|{item.get('id', '')}", item.get("name", ""))
        else:
            return []  # built-in tools (web search, ...) are not asked for
        self.blocks[position] = (item["type"], start.content_index)
        return [start]

    def _block(self, data: JsonObject, kind: str) -> int | None:
        found = self.blocks.get(data.get("output_index", -1))
        return found[1] if found and found[0] == kind else None

    def _response_reasoning_summary_part_added(self, data: JsonObject) -> list[AssistantMessageDelta]:
        index = self._block(data, "reasoning")
        if index is None:
            return []
        count = self.summary_parts.get(index, 0)
        self.summary_parts[index] = count + 1
        return [self.b.thinking_delta(index, "\n\n")] if count else []

    def _response_reasoning_summary_text_delta(self, data: JsonObject) -> list[AssistantMessageDelta]:
        index = self._block(data, "reasoning")
        return [] if index is None or not data.get("delta") else [self.b.thinking_delta(index, data["delta"])]

    def _response_output_text_delta(self, data: JsonObject) -> list[AssistantMessageDelta]:
        index = self._block(data, "message")
        return [] if index is None or not data.get("delta") else [self.b.text_delta(index, data["delta"])]

    _response_refusal_delta = _response_output_text_delta

    def _response_function_call_arguments_delta(self, data: JsonObject) -> list[AssistantMessageDelta]:
        index = self._block(data, "function_call")
        if index is None or not data.get("delta"):
            return []
        self.args_seen.add(index)
        return [self.b.toolcall_delta(index, data["delta"])]

    def _response_output_item_done(self, data: JsonObject) -> list[AssistantMessageDelta]:
        item, position = data.get("item") or {}, data.get("output_index", -1)
        found = self.blocks.pop(position, None)
        if found is None:
            return []
        kind, index = found
        if kind == "reasoning":
            if item.get("encrypted_content") or item.get("id"):
                self.b.thinking_signature(index, json.dumps(item))
            return [self.b.thinking_end(index)]
        if kind == "message":
            return [self.b.text_end(index, signature=item.get("id"))]
        out: list[AssistantMessageDelta] = []
        if index not in self.args_seen and item.get("arguments"):
            out.append(self.b.toolcall_delta(index, item["arguments"]))
        out.append(self.b.toolcall_end(index))
        return out

    def _response_completed(self, data: JsonObject) -> list[AssistantMessageDelta]:
        response = data.get("response") or {}
        self.usage = response.get("usage")
        self.outcome = ("done", "toolUse" if self.b.output.tool_calls() else "stop")
        return []

    def _response_incomplete(self, data: JsonObject) -> list[AssistantMessageDelta]:
        response = data.get("response") or {}
        self.usage = response.get("usage")
        reason = (response.get("incomplete_details") or {}).get("reason")
        if reason == "max_output_tokens":
            self.outcome = ("done", "length")
        else:
            text = f"the provider stopped the answer: incomplete ({reason or 'no reason given'})"
            self.outcome = ("error", (text, ProviderErrorDetail()))
        return []

    def _response_failed(self, data: JsonObject) -> list[AssistantMessageDelta]:
        response = data.get("response") or {}
        self.usage = response.get("usage")
        error = response.get("error") or {}
        text = error.get("message") or "the provider reported the response as failed"
        if error.get("code"):
            text = f"{error['code']}: {text}"
        self.outcome = ("error", (text, _error_detail(error.get("code"), text)))
        return []

    def _error(self, data: JsonObject) -> list[AssistantMessageDelta]:
        found = data.get("error")
        error: JsonObject = found if isinstance(found, dict) else data
        text = error.get("message") or "the provider sent an error"
        if error.get("code"):
            text = f"{error['code']}: {text}"
        self.outcome = ("error", (text, _error_detail(error.get("code"), text)))
        return []


async def stream_openai_responses(
    model: Model, context: Context, options: StreamOptions, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    builder = StreamBuilder(model)
    reader = _EventReader(builder)
    yield builder.start()
    url = model.base_url.rstrip("/") + "/responses"
    run = SseRun()
    source = sse_stream(model, url, headers_for(model, options), build_body(model, context, options), cancel)
    async for event in run.events(source, reader.event, lambda: reader.outcome is not None):
        yield event
    for event in reader.close_all():
        yield event
    builder.output.usage = _usage(model, reader.usage)
    if run.failed:
        yield builder.error(*run.failed)
    elif reader.outcome is None:
        yield builder.error("the stream ended before the response completed (the answer may be incomplete)",
                            detail=ProviderErrorDetail(retryable=True))
    elif reader.outcome[0] == "error":
        text, detail = reader.outcome[1]
        yield builder.error(text, detail=detail)
    else:
        yield builder.done(reader.outcome[1])


register_api(API, stream_openai_responses)
