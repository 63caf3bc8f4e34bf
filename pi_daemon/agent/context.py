"""Converters: what the model sees of the stored history, before every request.

``transform_context`` (optional, async) prunes or injects ``AgentMessage``s;
``convert_to_llm`` turns them into LLM messages; :func:`repair_for_provider` then makes
the sequence valid for any provider. None of them modify the stored history.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Sequence

from ..cancel import CancelToken
from ..llm.model import Context, Model
from ..messages import (
    AssistantMessage,
    LlmMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
    role_to_llm,
)

TransformContext = Callable[[list[Any], CancelToken], Awaitable[list[Any]]]
ConvertToLlm = Callable[[Sequence[Any]], list[LlmMessage]]
OutputLimit = Callable[[Model, Context], int | None]  # a request's max output tokens; None: the model's

LLM_TYPES = (UserMessage, AssistantMessage, ToolResultMessage)

MISSING_RESULT_TEXT = "No result was recorded for this tool call (the run was interrupted)."


def per_message(convert: ConvertToLlm) -> ConvertToLlm:
    """Mark ``convert`` as converting each message by itself (so a grown history's old part
    converts as it did before, and :class:`ConvertMemo` may convert only the new part)."""
    convert.per_message = True  # type: ignore[attr-defined]
    return convert


@per_message
def default_convert_to_llm(messages: Sequence[Any]) -> list[LlmMessage]:
    """Keep the three LLM roles; leave application roles out."""
    return [m for m in messages if isinstance(m, LLM_TYPES)]


@per_message
def convert_with_roles(messages: Sequence[Any]) -> list[LlmMessage]:
    """Keep the LLM roles and translate application roles by their registered conversion."""
    result = []
    for message in messages:
        converted = role_to_llm(message)
        if converted is not None:
            result.append(converted)
    return result


class ConvertMemo:
    """The last conversion of a run's history: a history that only grew since converts its
    new messages only, so a turn's cost does not grow with the length of the session (a
    1,000-turn tool loop converted 2,000 messages in Python on its last turns). The old
    part keeps the very objects it converted to, which the checks after it compare by
    identity."""

    def __init__(self) -> None:
        self.seen: list[Any] = []
        self.converted: list[LlmMessage] = []

    def convert(self, convert: ConvertToLlm, messages: list[Any]) -> list[LlmMessage]:
        if not getattr(convert, "per_message", False):
            return convert(messages)
        n = len(self.seen)
        if n and len(messages) >= n and messages[n - 1] is self.seen[-1] and messages[:n] == self.seen:
            converted = self.converted + convert(messages[n:])
        else:
            converted = convert(messages)
        self.seen, self.converted = list(messages), converted
        return list(converted)


class RepairMemo:
    """Where :func:`repair_for_provider` stopped last time: a history that only grew since is
    repaired from there, so a turn's cost does not grow with the length of the session."""

    def __init__(self) -> None:
        self.seen: list[LlmMessage] = []
        self.kept: list[LlmMessage] = []  # before the trailing open calls were closed
        self.open_calls: dict[str, tuple[str, int]] = {}
        self.answered: set[str] = set()


def repair_for_provider(messages: Sequence[LlmMessage], memo: RepairMemo | None = None) -> list[LlmMessage]:
    """A provider-valid copy: no failed assistant turns, every tool call answered once.

    Assistant messages that ended in ``error`` or ``aborted`` are dropped (with results
    that answer their calls); tool results that answer no earlier call are dropped; a
    call left without a result gets a synthetic error result right after its turn.
    """
    start = 0
    kept: list[LlmMessage] = []
    open_calls: dict[str, tuple[str, int]] = {}  # call id -> tool name and turn time, for the latest turn
    answered: set[str] = set()
    # The prefix check compares by identity first (list equality does), so it is cheap.
    if memo is not None and memo.seen and len(messages) >= len(memo.seen) \
            and list(messages[: len(memo.seen)]) == memo.seen:
        start = len(memo.seen)
        kept, open_calls, answered = list(memo.kept), dict(memo.open_calls), set(memo.answered)

    def close_open_calls() -> None:
        for call_id, (name, at) in open_calls.items():
            if call_id not in answered:
                kept.append(
                    ToolResultMessage(
                        tool_call_id=call_id,
                        tool_name=name,
                        content=[TextContent(text=MISSING_RESULT_TEXT)],
                        is_error=True,
                        timestamp=at,
                    )
                )
        open_calls.clear()

    for n in range(start, len(messages)):
        message = messages[n]
        if isinstance(message, ToolResultMessage):
            if message.tool_call_id in open_calls and message.tool_call_id not in answered:
                answered.add(message.tool_call_id)
                kept.append(message)
            continue
        close_open_calls()
        if isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            for call in message.tool_calls():
                open_calls[call.id] = (call.name, message.timestamp)
        kept.append(message)
    if memo is not None:
        memo.seen, memo.kept = list(messages), list(kept)
        memo.open_calls, memo.answered = dict(open_calls), set(answered)
    close_open_calls()
    return kept
