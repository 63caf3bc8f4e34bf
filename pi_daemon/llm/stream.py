"""The provider seam: ``(model, context, options, cancel) -> async stream of assistant events``.

A provider registers a stream function for its ``api``. :func:`stream` dispatches to it
and wraps it in :func:`guarded`, so callers get a stream that never raises: an
exception becomes a final ``error`` event, a cancellation a final ``aborted`` one, and
a stream that stops without a final event is reported as an error, never as success.

:class:`StreamBuilder` holds the partial message a provider builds and makes the events
that describe each change, so every provider produces identical event shapes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import AsyncIterator, Callable, Literal, TypeVar

import attrs

from ..cancel import CancelToken, Cancelled
from ..events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolcallDeltaEvent,
    ToolcallEndEvent,
    ToolcallStartEvent,
)
from ..json_types import JsonObject, JsonValue
from ..messages import AssistantContent, AssistantMessage, StopReason, TextContent, ThinkingContent, ToolCall
from .config_values import is_command, resolve
from .errors import ProviderErrorDetail, auth_refusal
from .model import Context, Model, StreamOptions

log = logging.getLogger(__name__)

_Block = TypeVar("_Block", TextContent, ThinkingContent, ToolCall)
ErrorReason = Literal["error", "aborted"]
BlockStartEvent = TextStartEvent | ThinkingStartEvent | ToolcallStartEvent
"""What opens a content block; its ``content_index`` is the block's index."""

StreamFn = Callable[[Model, Context, StreamOptions, CancelToken], AsyncIterator[AssistantMessageEvent]]

_APIS: dict[str, StreamFn] = {}


def register_api(api: str, fn: StreamFn) -> None:
    _APIS[api] = fn


# Providers over HTTP are imported on first use: they are not needed to start the daemon.
_LAZY_APIS = {
    "openai-completions": "pi_daemon.llm.openai_completions",
    "openai-responses": "pi_daemon.llm.openai_responses",
    "anthropic-messages": "pi_daemon.llm.anthropic_messages",
    "google-generative-ai": "pi_daemon.llm.google_generative_ai",
}


def known_apis() -> list[str]:
    return sorted(set(_APIS) | set(_LAZY_APIS))


def load_provider(api: str) -> None:
    """Import the provider of ``api`` now (it is otherwise imported by its first request)."""
    if api not in _APIS and api in _LAZY_APIS:
        import importlib

        importlib.import_module(_LAZY_APIS[api])


def stream(
    model: Model, context: Context, options: StreamOptions, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one assistant message from the provider of ``model.api``; never raises."""
    load_provider(model.api)
    fn = _APIS.get(model.api)
    if fn is None:
        return _single_error(model, f"no provider is registered for api {model.api!r}")
    if model.headers and any(is_command(v) for v in model.headers.values()):
        return guarded(_with_command_headers(fn, model, context, options, cancel), model, cancel)
    return guarded(fn(model, context, options, cancel), model, cancel)


async def _with_command_headers(fn: StreamFn, model: Model, context: Context, options: StreamOptions,
                                cancel: CancelToken) -> AsyncIterator[AssistantMessageEvent]:
    """The stream with each ``!command`` header replaced by the command's output (run once)."""
    headers: dict[str, str] = {}
    for name, spec in (model.headers or {}).items():
        value, failed = await resolve(spec)
        if failed or value is None:
            async for event in _single_error(model, f"header {name} of {model.spec}: {failed or 'no value'}"):
                yield event
            return
        headers[name] = value
    async for event in fn(attrs.evolve(model, headers=headers), context, options, cancel):
        yield event


async def _single_error(model: Model, text: str) -> AsyncIterator[AssistantMessageEvent]:
    message = empty_message(model)
    message.stop_reason = "error"
    message.error_message = text
    yield ErrorEvent(reason="error", error=message)


def empty_message(model: Model) -> AssistantMessage:
    return AssistantMessage(
        api=model.api, provider=model.provider, model=model.id, stop_reason="pending"
    )


async def guarded(
    inner: AsyncIterator[AssistantMessageEvent], model: Model, cancel: CancelToken
) -> AsyncIterator[AssistantMessageEvent]:
    partial: AssistantMessage | None = None
    reason: ErrorReason
    try:
        async for event in inner:
            if isinstance(event, (DoneEvent, ErrorEvent)):
                yield event
                return
            partial = getattr(event, "partial", None) or partial
            yield event
        failure, reason = "the provider stream ended without a final event", "error"
    except (Cancelled, asyncio.CancelledError):
        if not cancel.cancelled:
            raise
        failure, reason = "Request was aborted", "aborted"
    except Exception as exc:  # noqa: BLE001 - the seam turns every failure into a message
        log.debug("provider stream failed", exc_info=True)
        failure, reason = (str(exc) or type(exc).__name__), "error"
    finally:
        aclose = getattr(inner, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except Exception:  # noqa: BLE001
                log.debug("closing provider stream failed", exc_info=True)
    message = partial or empty_message(model)
    if cancel.cancelled:
        failure, reason = "Request was aborted", "aborted"
    message.stop_reason = reason
    message.error_message = failure
    yield ErrorEvent(reason=reason, error=message)


def parse_tool_arguments(text: str) -> JsonObject:
    """Arguments JSON of a tool call; tolerant of a stream cut short inside it."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = _close_partial_json(text)
    return value if isinstance(value, dict) else {}


def _whole_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _close_partial_json(text: str) -> JsonValue:
    stack: list[str] = []
    in_string, escaped = False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    closed = text + ('"' if in_string else "") + "".join(reversed(stack))
    try:
        return json.loads(closed)
    except json.JSONDecodeError:
        return None


class StreamBuilder:
    """Builds one partial assistant message and the events describing its growth."""

    def __init__(self, model: Model) -> None:
        self.output = empty_message(model)
        self._args: dict[int, list[str]] = {}

    def start(self) -> StartEvent:
        return StartEvent(partial=self.output)

    def _append(self, block: AssistantContent) -> int:
        self.output.content.append(block)
        return len(self.output.content) - 1

    def block(self, index: int, kind: type[_Block]) -> _Block:
        """The content block at ``index``, which must be a ``kind``."""
        block = self.output.content[index]
        assert isinstance(block, kind), f"content {index} is {block.type}, not {kind.__name__}"
        return block

    def text_start(self) -> TextStartEvent:
        return TextStartEvent(self._append(TextContent()), self.output)

    def text_delta(self, index: int, delta: str) -> TextDeltaEvent:
        block = self.block(index, TextContent)
        # Detached first, so the only reference is the local and CPython grows the string in
        # place: ``block.text += delta`` copies the whole text for each delta (quadratic).
        text, block.text = block.text, ""
        text += delta
        block.text = text
        return TextDeltaEvent(index, delta, self.output)

    def text_end(self, index: int, signature: str | None = None) -> TextEndEvent:
        block = self.block(index, TextContent)
        if signature:
            block.text_signature = signature
        return TextEndEvent(index, block.text, self.output)

    def thinking_start(self, redacted: bool | None = None) -> ThinkingStartEvent:
        return ThinkingStartEvent(self._append(ThinkingContent(redacted=redacted)), self.output)

    def thinking_delta(self, index: int, delta: str) -> ThinkingDeltaEvent:
        block = self.block(index, ThinkingContent)
        thinking, block.thinking = block.thinking, ""  # grown in place, as in text_delta
        thinking += delta
        block.thinking = thinking
        return ThinkingDeltaEvent(index, delta, self.output)

    def thinking_signature(self, index: int, signature: str) -> None:
        block = self.block(index, ThinkingContent)
        block.thinking_signature = (block.thinking_signature or "") + signature

    def thinking_end(self, index: int) -> ThinkingEndEvent:
        return ThinkingEndEvent(index, self.block(index, ThinkingContent).thinking, self.output)

    def toolcall_start(self, call_id: str, name: str) -> ToolcallStartEvent:
        index = self._append(ToolCall(id=call_id, name=name))
        self._args[index] = []
        return ToolcallStartEvent(index, call_id, name, self.output)

    def toolcall_delta(self, index: int, delta: str) -> ToolcallDeltaEvent:
        self._args[index].append(delta)
        return ToolcallDeltaEvent(index, delta, self.output)

    def toolcall_end(self, index: int) -> ToolcallEndEvent:
        call = self.block(index, ToolCall)
        text = "".join(self._args.pop(index, []))
        call.arguments = parse_tool_arguments(text)
        if text.strip() and not _whole_json(text):
            call.received_arguments = text
        return ToolcallEndEvent(index, call, self.output)

    def done(self, stop_reason: StopReason) -> DoneEvent:
        self.output.stop_reason = stop_reason
        return DoneEvent(reason=stop_reason, message=self.output)

    def error(self, text: str, reason: ErrorReason = "error", detail: ProviderErrorDetail | None = None) -> ErrorEvent:
        self.output.stop_reason = reason
        self.output.error_message = text
        self.output.error_detail = detail
        if auth_refusal(self.output.provider, text, detail):
            self.output.error_kind, self.output.error_provider = "auth", self.output.provider
        return ErrorEvent(reason=reason, error=self.output)
