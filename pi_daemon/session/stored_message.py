"""A stored message read into its class without the converter, for the shapes the daemon writes.

Loading a long session reads every message on the active branch; through the converter
each field costs a hook call and an error-collecting frame, which dominated the load.
Here the usual ``user``, ``assistant`` and ``toolResult`` messages are built directly,
each field checked exactly as the converter checks it (a string is a ``str``, an integer an
``int`` and never a ``bool``, a cost may be an ``int`` and becomes a ``float``). Anything
else — another role, a missing timestamp, a slash command, a field of the wrong type —
returns ``None``, and the caller reads the message with :func:`..messages.message_from_wire`,
which gives the same object or the error that names the field.
"""

from __future__ import annotations

from typing import Any, Callable, get_args

from ..messages import (
    AssistantMessage,
    Cost,
    ImageContent,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

_STOP_REASONS = frozenset(get_args(StopReason))
_ABSENT = object()


def _opt_str(value: Any) -> bool:
    return value is None or type(value) is str


def _text(o: dict[str, Any]) -> TextContent | None:
    text, signature = o.get("text", ""), o.get("textSignature")
    if type(text) is not str or not _opt_str(signature):
        return None
    return TextContent(text=text, text_signature=signature)


def _image(o: dict[str, Any]) -> ImageContent | None:
    data, mime = o.get("data", ""), o.get("mimeType", "image/png")
    if type(data) is not str or type(mime) is not str:
        return None
    return ImageContent(data=data, mime_type=mime)


def _thinking(o: dict[str, Any]) -> ThinkingContent | None:
    thinking, signature, redacted = o.get("thinking", ""), o.get("thinkingSignature"), o.get("redacted")
    if type(thinking) is not str or not _opt_str(signature) or not (redacted is None or type(redacted) is bool):
        return None
    return ThinkingContent(thinking=thinking, thinking_signature=signature, redacted=redacted)


def _tool_call(o: dict[str, Any]) -> ToolCall | None:
    call_id, name, arguments, signature = o.get("id", ""), o.get("name", ""), o.get("arguments"), o.get("thoughtSignature")
    if type(call_id) is not str or type(name) is not str or not _opt_str(signature):
        return None
    if "arguments" not in o:
        arguments = {}
    elif type(arguments) is dict:
        arguments = dict(arguments)  # a copy, as the converter makes: the stored entry stays as read
    else:
        return None
    return ToolCall(id=call_id, name=name, arguments=arguments, thought_signature=signature)


Block = Callable[[dict[str, Any]], Any]
_USER_BLOCKS: dict[Any, Block] = {"text": _text, "image": _image}
_ASSISTANT_BLOCKS: dict[Any, Block] = {"text": _text, "thinking": _thinking, "toolCall": _tool_call}


def _blocks(value: Any, readers: dict[Any, Block]) -> list[Any] | None:
    if type(value) is not list:
        return None
    out = []
    for o in value:
        if type(o) is not dict:
            return None
        kind = o.get("type")
        reader = readers.get(kind) if type(kind) is str else None
        block = reader(o) if reader is not None else None
        if block is None:
            return None
        out.append(block)
    return out


def _cost(value: dict[str, Any]) -> Cost | None:
    amounts = []
    for amount in (value.get("input", 0.0), value.get("output", 0.0), value.get("cacheRead", 0.0),
                   value.get("cacheWrite", 0.0), value.get("total", 0.0)):
        kind = type(amount)
        if kind is int:
            try:
                amount = float(amount)
            except OverflowError:  # an integer beyond a float: the converter says so
                return None
        elif kind is not float:
            return None
        amounts.append(amount)
    return Cost(*amounts)  # in the class's field order, as is Usage below (the tests compare with the converter)


def _usage(value: Any) -> Usage | None:
    if type(value) is not dict:
        return None
    get = value.get
    counts = (get("input", 0), get("output", 0), get("cacheRead", 0), get("cacheWrite", 0), get("totalTokens", 0))
    for count in counts:
        if type(count) is not int:
            return None
    cost = get("cost", _ABSENT)
    if cost is _ABSENT:
        cost = Cost()
    elif type(cost) is not dict or (cost := _cost(cost)) is None:
        return None
    return Usage(*counts, cost)


def _user(o: dict[str, Any]) -> UserMessage | None:
    content = o.get("content", "")
    if type(content) is not str:
        content = _blocks(content, _USER_BLOCKS)
        if content is None:
            return None
    if "command" in o and o["command"] is not None:
        return None  # rare: the converter reads it
    return UserMessage(content=content, timestamp=o["timestamp"])


def _assistant(o: dict[str, Any]) -> AssistantMessage | None:
    content = _blocks(o["content"], _ASSISTANT_BLOCKS) if "content" in o else []
    api, provider, model = o.get("api", ""), o.get("provider", ""), o.get("model", "")
    stop, error = o.get("stopReason", "stop"), o.get("errorMessage")
    if (content is None or type(api) is not str or type(provider) is not str or type(model) is not str
            or type(stop) is not str or stop not in _STOP_REASONS or not _opt_str(error)):
        return None
    usage = _usage(o["usage"]) if "usage" in o else Usage()
    if usage is None:
        return None
    return AssistantMessage(content=content, api=api, provider=provider, model=model, usage=usage,
                            stop_reason=stop, error_message=error,  # type: ignore[arg-type]  # checked above
                            timestamp=o["timestamp"])


def _tool_result(o: dict[str, Any]) -> ToolResultMessage | None:
    call_id, name, is_error = o.get("toolCallId", ""), o.get("toolName", ""), o.get("isError", False)
    content = _blocks(o["content"], _USER_BLOCKS) if "content" in o else []
    if content is None or type(call_id) is not str or type(name) is not str or type(is_error) is not bool:
        return None
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=content, details=o.get("details"),
                             is_error=is_error, timestamp=o["timestamp"])


_ROLES: dict[Any, Callable[[dict[str, Any]], Any]] = {
    "user": _user, "assistant": _assistant, "toolResult": _tool_result,
}


def read(data: Any) -> Any:
    """The message of a stored ``message`` dict, or ``None`` when the converter must read it."""
    if type(data) is not dict or type(data.get("timestamp")) is not int:
        return None  # a missing timestamp is filled in by the class: the converter does that
    role = data.get("role")
    reader = _ROLES.get(role) if type(role) is str else None
    return reader(data) if reader is not None else None
