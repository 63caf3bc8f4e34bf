"""The faux provider: replays scripted assistant messages in small chunks, offline.

Used by tests and offline demos. Each model request takes the next scripted reply (an
``AssistantMessage`` or a function of the request's :class:`Context` returning one)
and streams it exactly like a real provider would: text and thinking in chunks of
``chunk_size`` characters, tool-call arguments as JSON fragments, then ``done`` (or
``error`` when the scripted reply is an error). When the script runs out, the reply is
an error message that says so.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections import deque
from typing import AsyncIterator, Callable, Iterable, Union

from ..cancel import CancelToken, race
from ..events import AssistantMessageEvent
from ..json_types import JsonObject
from ..messages import (
    AssistantContent,
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    user_text,
)
from . import picker
from .cost import apply_cost
from .model import Context, Model, ModelCost, StreamOptions
from .stream import BlockStartEvent, StreamBuilder, register_api

FAUX_API = "faux"


class Conditional:
    """A scripted reply only for requests whose first user message contains ``when`` (each
    subagent's own replies, while several run at once)."""

    def __init__(self, when: str, reply: "AssistantMessage | Callable[[Context], AssistantMessage]") -> None:
        self.when = when
        self.reply = reply


Reply = Union[AssistantMessage, Callable[[Context], AssistantMessage], Conditional]

_PROVIDERS: dict[str, "FauxProvider"] = {}


def text_reply(text: str, *, thinking: str | None = None) -> AssistantMessage:
    content: list[AssistantContent] = [ThinkingContent(thinking=thinking)] if thinking else []
    content.append(TextContent(text=text))
    return AssistantMessage(content=content, stop_reason="stop")


def tool_reply(*calls: tuple[str, JsonObject] | tuple[str, JsonObject, str], text: str = "") -> AssistantMessage:
    """An assistant message calling tools: each call is ``(name, args)`` or ``(name, args, id)``."""
    content: list[AssistantContent] = [TextContent(text=text)] if text else []
    for n, call in enumerate(calls):
        name, args, *rest = call
        content.append(ToolCall(id=rest[0] if rest else f"call_{n}", name=name, arguments=args))
    return AssistantMessage(content=content, stop_reason="toolUse")


def estimate_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _context_text(context: Context) -> str:
    parts = [context.system_prompt]
    for message in context.messages:
        if message.role == "assistant":
            parts.append(message.text())
            parts.extend(json.dumps(c.arguments) for c in message.tool_calls())
        else:
            parts.append(user_text(message))
    return "".join(parts)


class FauxProvider:
    """A scripted provider; ``requests`` records the context of every request it got."""

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        model_id: str = "scripted",
        chunk_size: int = 4,
        delay: float = 0.0,
        context_window: int = 128_000,
        fallback: Callable[[Context], AssistantMessage] | None = None,
        cost: ModelCost | None = None,
    ) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.fallback = fallback
        self.model_id = model_id
        self.chunk_size = max(1, chunk_size)
        self.delay = delay
        self.context_window = context_window
        self.cost = cost or ModelCost()
        self.requests: list[Context] = []
        self.served = 0
        self._chunks_since_yield = 0
        _PROVIDERS[model_id] = self

    def model(self) -> Model:
        return Model(
            id=self.model_id,
            provider="faux",
            api=FAUX_API,
            name=f"Faux ({self.model_id})",
            reasoning=True,
            input=["text", "image"],
            context_window=self.context_window,
            cost=self.cost,
        )

    def push(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, cancel: CancelToken
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append(copy.deepcopy(context))
        builder = StreamBuilder(model)
        yield builder.start()
        if not self.replies and self.fallback is not None:
            self.replies.append(self.fallback)
        reply = self._take(context)
        if reply is None:
            yield builder.error(
                f"faux provider {self.model_id!r}: script exhausted, no reply left for "
                f"request {len(self.requests)} ({self.served} replies were scripted)"
            )
            return
        self.served += 1
        template = reply(context) if callable(reply) else reply
        for block in template.content:
            async for event in self._stream_block(builder, block, cancel):
                yield event
        usage = Usage(
            input=estimate_tokens(_context_text(context)),
            output=estimate_tokens(_context_text(Context(messages=[builder.output]))),
        )
        builder.output.usage = apply_cost(model, usage)
        if template.stop_reason == "error":
            yield builder.error(template.error_message or "scripted error")
            return
        stop = template.stop_reason
        if stop == "stop" and builder.output.tool_calls():
            stop = "toolUse"
        yield builder.done(stop)

    def _take(self, context: Context) -> AssistantMessage | Callable[[Context], AssistantMessage] | None:
        """The first conditional reply that matches the request, else the first plain one."""
        first = next((user_text(m) for m in context.messages if m.role == "user"), "")
        for wanted in (True, False):
            for n, reply in enumerate(self.replies):
                if isinstance(reply, Conditional) != wanted:
                    continue
                if isinstance(reply, Conditional) and reply.when not in first:
                    continue
                del self.replies[n]
                return reply.reply if isinstance(reply, Conditional) else reply
        return None

    async def _pause(self, cancel: CancelToken) -> None:
        cancel.raise_if_cancelled()
        if self.delay > 0:
            await race(asyncio.sleep(self.delay), cancel)
        else:
            self._chunks_since_yield += 1
            if self._chunks_since_yield >= 16:  # like a network read: let other work run
                self._chunks_since_yield = 0
                await asyncio.sleep(0)

    def _chunks(self, text: str) -> list[str]:
        size = self.chunk_size
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]

    async def _stream_block(self, builder: StreamBuilder, block: AssistantContent,
                            cancel: CancelToken) -> AsyncIterator[AssistantMessageEvent]:
        start: BlockStartEvent
        if isinstance(block, TextContent):
            start = builder.text_start()
            yield start
            for chunk in self._chunks(block.text):
                await self._pause(cancel)
                yield builder.text_delta(start.content_index, chunk)
            yield builder.text_end(start.content_index)
        elif isinstance(block, ThinkingContent):
            start = builder.thinking_start(block.redacted)
            yield start
            for chunk in self._chunks(block.thinking):
                await self._pause(cancel)
                yield builder.thinking_delta(start.content_index, chunk)
            if block.thinking_signature:
                builder.thinking_signature(start.content_index, block.thinking_signature)
            yield builder.thinking_end(start.content_index)
        elif isinstance(block, ToolCall):
            start = builder.toolcall_start(block.id, block.name)
            yield start
            for chunk in self._chunks(json.dumps(block.arguments)):
                await self._pause(cancel)
                yield builder.toolcall_delta(start.content_index, chunk)
            yield builder.toolcall_end(start.content_index)


def echo_reply(context: Context) -> AssistantMessage:
    """The offline demo's answer: it repeats what the user said last."""
    last = next((m for m in reversed(context.messages) if m.role == "user"), None)
    said = user_text(last) if last is not None else ""
    how = picker.choose_model("configure one in .pi/models.json or pass --model provider/id")
    return text_reply(
        f"You said: {said}\n\n(This is pi-daemon's offline faux model. To talk to a real model, {how}.)",
        thinking="The user wants an answer; the faux model can only echo.",
    )


def load_script(path: str) -> FauxProvider:
    """A faux provider from a JSON script file.

    ``{"modelId": "script", "chunkSize": 4, "delayMs": 0, "contextWindow": 128000,
    "cost": {"input": 3, "output": 15}, "replies": [reply, ...]}`` (cost: USD per million
    tokens) where
    a reply is an assistant message without its role (``content``, ``stopReason``,
    ``errorMessage``) or ``{"echo": true}``; with ``"when": "text"`` it answers only a request
    whose first user message contains that text (taken before the plain replies, in order).
    """
    from ..messages import message_from_wire

    with open(path, encoding="utf-8") as f:
        script = json.load(f)
    replies: list[Reply] = []
    for raw in script.get("replies", []):
        raw = dict(raw)
        when = raw.pop("when", None)
        reply = echo_reply if raw.get("echo") else \
            message_from_wire({"role": "assistant", "stopReason": "stop", **raw})
        replies.append(Conditional(str(when), reply) if when is not None else reply)
    return FauxProvider(
        replies,
        model_id=script.get("modelId", "script"),
        chunk_size=int(script.get("chunkSize", 4)),
        delay=float(script.get("delayMs", 0)) / 1000,
        context_window=int(script.get("contextWindow", 128_000)),
        cost=ModelCost(**{k: float(v) for k, v in (script.get("cost") or {}).items()}),
    )


async def _dispatch(model: Model, context: Context, options: StreamOptions,
                    cancel: CancelToken) -> AsyncIterator[AssistantMessageEvent]:
    provider = _PROVIDERS.get(model.id)
    if provider is None:
        builder = StreamBuilder(model)
        yield builder.error(f"no faux provider named {model.id!r} exists in this process")
        return
    async for event in provider.stream(model, context, options, cancel):
        yield event


register_api(FAUX_API, _dispatch)
