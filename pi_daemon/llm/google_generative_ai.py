"""``google-generative-ai``: Gemini's ``POST {baseUrl}/models/{id}:streamGenerateContent?alt=sse``.

Each SSE ``data:`` line is a whole ``GenerateContentResponse`` chunk: ``candidates[0].content
.parts`` carry text, thought summaries (``thought: true``) and whole ``functionCall``s, and
``usageMetadata`` the running token counts; the last chunk has the ``finishReason``. There
is no ``[DONE]``. The key goes in ``x-goog-api-key``.

A ``thoughtSignature`` (Gemini's encrypted reasoning state) may sit on any part; it is kept
on the block it came with — thinking, text or tool call — and sent back with it, which
Gemini 3 requires for function calls. The thinking level is a ``thinkingBudget`` for Gemini
2.x and a ``thinkingLevel`` for later models.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, AsyncIterator

from ..cancel import CancelToken
from ..events import AssistantMessageDelta, AssistantMessageEvent
from ..json_types import JsonObject
from ..messages import AssistantMessage, ImageContent, StopReason, TextContent, ThinkingContent, ToolCall, \
    ToolResultMessage, Usage, UserContent, UserMessage
from .cost import apply_cost
from .errors import ProviderErrorDetail, classify
from .http import sse_stream
from .model import Context, Model, StreamOptions
from .sse_run import SseRun
from .stream import BlockStartEvent, ErrorReason, StreamBuilder, register_api

API = "google-generative-ai"
BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 24576}
LEVELS = {"minimal": "low", "low": "low", "medium": "high", "high": "high", "xhigh": "high"}
FINISHED: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length", "FINISH_REASON_UNSPECIFIED": "stop"}
GENERATED_ID = "gemini-call-"  # a call id the daemon made up (Gemini sent none): not sent back
_ids = itertools.count(1)


def _budgeted(model: Model) -> bool:
    """Gemini 2.x takes a token budget; later models a thinking level."""
    return model.id.startswith(("gemini-2", "gemini-1"))


def _user_parts(content: str | list[UserContent]) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"text": content}]
    parts: list[JsonObject] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"text": block.text})
        elif isinstance(block, ImageContent):
            parts.append({"inlineData": {"mimeType": block.mime_type, "data": block.data}})
    return parts


def _model_parts(message: AssistantMessage, model: Model) -> list[JsonObject]:
    own = message.api == API and message.provider == model.provider
    parts: list[JsonObject] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            if own and block.thinking_signature:
                parts.append({"text": block.thinking, "thought": True, "thoughtSignature": block.thinking_signature})
        elif isinstance(block, TextContent):
            part: dict[str, Any] = {"text": block.text}
            if own and block.text_signature:
                part["thoughtSignature"] = block.text_signature
            if block.text or "thoughtSignature" in part:
                parts.append(part)
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments}
            if own and not block.id.startswith(GENERATED_ID):
                call["id"] = block.id
            part = {"functionCall": call}
            if own and block.thought_signature:
                part["thoughtSignature"] = block.thought_signature
            parts.append(part)
    return parts


def convert_contents(model: Model, context: Context) -> list[JsonObject]:
    contents: list[JsonObject] = []

    def add(role: str, parts: list[JsonObject]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role and role == "user" and any(
                "functionResponse" in p for p in contents[-1]["parts"]) and any("functionResponse" in p for p in parts):
            contents[-1]["parts"].extend(parts)  # the results of one turn's calls go together
        else:
            contents.append({"role": role, "parts": parts})

    for message in context.messages:
        if isinstance(message, UserMessage):
            add("user", _user_parts(message.content))
        elif isinstance(message, AssistantMessage):
            add("model", _model_parts(message, model))
        elif isinstance(message, ToolResultMessage):
            text = "".join(b.text for b in message.content if isinstance(b, TextContent)) or "(no output)"
            response: dict[str, Any] = {"name": message.tool_name,
                                        "response": {"error" if message.is_error else "output": text}}
            if not message.tool_call_id.startswith(GENERATED_ID):
                response["id"] = message.tool_call_id
            images = [{"inlineData": {"mimeType": b.mime_type, "data": b.data}}
                      for b in message.content if isinstance(b, ImageContent) and "image" in model.input]
            add("user", [{"functionResponse": response}, *images])
    return contents


def build_body(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    config: dict[str, Any] = {"maxOutputTokens": options.max_tokens or model.max_tokens}
    if options.temperature is not None:
        config["temperature"] = options.temperature
    if model.reasoning:
        level = options.thinking_level
        if level != "off":
            thinking: dict[str, Any] = {"includeThoughts": True}
            if _budgeted(model):
                thinking["thinkingBudget"] = BUDGETS[level]
            else:
                thinking["thinkingLevel"] = LEVELS[level]
            config["thinkingConfig"] = thinking
        elif _budgeted(model) and "flash" in model.id:
            config["thinkingConfig"] = {"thinkingBudget": 0}  # Pro cannot switch thinking off
    body: dict[str, Any] = {"contents": convert_contents(model, context), "generationConfig": config}
    if context.system_prompt:
        body["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
    if context.tools:
        body["tools"] = [{"functionDeclarations": [
            {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
            for t in context.tools]}]
    return body


def headers_for(model: Model, options: StreamOptions) -> dict[str, str]:
    headers = dict(model.headers or {})
    if options.api_key:
        headers["x-goog-api-key"] = options.api_key
        if model.auth_header:
            headers["authorization"] = f"Bearer {options.api_key}"
    headers.update(options.headers or {})
    return headers


def _usage(model: Model, raw: JsonObject | None) -> Usage:
    if not raw:
        return Usage()
    cached = raw.get("cachedContentTokenCount") or 0
    # thoughts are billed as output but not counted in candidatesTokenCount
    output = (raw.get("candidatesTokenCount") or 0) + (raw.get("thoughtsTokenCount") or 0)
    return apply_cost(model, Usage(input=max(0, (raw.get("promptTokenCount") or 0) - cached), output=output,
                                   cache_read=cached))


class _ChunkReader:
    def __init__(self, builder: StreamBuilder) -> None:
        self.b = builder
        self.open: tuple[str, int] | None = None  # ("text" | "thinking", content index)
        self.finish: str | None = None
        self.blocked: str | None = None
        self.usage: JsonObject | None = None
        self.error: tuple[str, ErrorReason, ProviderErrorDetail] | None = None

    def close(self) -> list[AssistantMessageDelta]:
        if self.open is None:
            return []
        kind, index = self.open
        self.open = None
        return [self.b.thinking_end(index) if kind == "thinking" else self.b.text_end(index)]

    def _sign(self, signature: str) -> None:
        """A signature on a part with nothing else: it belongs to the block before it."""
        for block in reversed(self.b.output.content):
            if isinstance(block, ThinkingContent):
                block.thinking_signature = signature
            elif isinstance(block, TextContent):
                block.text_signature = signature
            elif isinstance(block, ToolCall):
                block.thought_signature = signature
            return

    def _text(self, kind: str, text: str, signature: str | None) -> list[AssistantMessageDelta]:
        out: list[AssistantMessageDelta] = []
        if self.open is None or self.open[0] != kind:
            out += self.close()
            start: BlockStartEvent = self.b.thinking_start() if kind == "thinking" else self.b.text_start()
            out.append(start)
            self.open = (kind, start.content_index)
        index = self.open[1]
        if text:
            out.append(self.b.thinking_delta(index, text) if kind == "thinking" else self.b.text_delta(index, text))
        if signature:
            if kind == "thinking":
                self.b.block(index, ThinkingContent).thinking_signature = signature
            else:
                self.b.block(index, TextContent).text_signature = signature
        return out

    def chunk(self, data: JsonObject) -> list[AssistantMessageDelta]:
        out: list[AssistantMessageDelta] = []
        if isinstance(data.get("error"), dict):  # an error after the 200
            error = data["error"]
            text = f"{error.get('code', '')} {error.get('message') or error.get('status') or 'error'}".strip()
            code = error.get("code")
            self.error = (text, "error", classify(code if isinstance(code, int) else None, text))
            return out
        if data.get("usageMetadata"):
            self.usage = data["usageMetadata"]
        feedback = data.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            self.blocked = feedback["blockReason"]
        for candidate in (data.get("candidates") or [])[:1]:
            for part in (candidate.get("content") or {}).get("parts") or []:
                signature = part.get("thoughtSignature")
                if "functionCall" in part:
                    out += self.close()
                    call = part["functionCall"]
                    call_id = call.get("id") or f"{GENERATED_ID}{next(_ids)}"
                    start = self.b.toolcall_start(call_id, call.get("name", ""))
                    out.append(start)
                    out.append(self.b.toolcall_delta(start.content_index, json.dumps(call.get("args") or {})))
                    end = self.b.toolcall_end(start.content_index)
                    end.tool_call.thought_signature = signature
                    out.append(end)
                elif isinstance(part.get("text"), str) and (part["text"] or signature):
                    if not part["text"] and self.open is None:
                        self._sign(signature)
                        continue
                    out += self._text("thinking" if part.get("thought") else "text", part["text"], signature)
            if candidate.get("finishReason"):
                self.finish = candidate["finishReason"]
        return out


async def stream_google(
    model: Model, context: Context, options: StreamOptions, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    builder = StreamBuilder(model)
    reader = _ChunkReader(builder)
    yield builder.start()
    url = f"{model.base_url.rstrip('/')}/models/{model.id}:streamGenerateContent?alt=sse"
    run = SseRun()
    source = sse_stream(model, url, headers_for(model, options), build_body(model, context, options), cancel)
    async for event in run.events(source, reader.chunk, lambda: reader.error is not None):
        yield event
    for event in reader.close():
        yield event
    builder.output.usage = _usage(model, reader.usage)
    failed = run.failed or reader.error
    if failed:
        yield builder.error(*failed)
    elif reader.blocked:
        yield builder.error(f"the provider blocked the prompt: {reader.blocked}")
    elif reader.finish is None:
        yield builder.error("the stream ended without a finish reason (the answer may be incomplete)",
                            detail=ProviderErrorDetail(retryable=True))
    elif reader.finish in FINISHED:
        stop = FINISHED[reader.finish]
        yield builder.done("toolUse" if stop == "stop" and builder.output.tool_calls() else stop)
    else:
        yield builder.error(f"the provider stopped the answer: finishReason {reader.finish}")


register_api(API, stream_google)
