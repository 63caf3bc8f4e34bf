"""The agent loop: one run, from its input messages until the agent stops.

``agent_start``, ``turn_start``, the input messages, then per turn: deliver steering,
stream the assistant message, execute its tool calls, ``turn_end``; when no tool calls
and no steering remain, deliver follow-ups; when none remain, ``agent_end``.

:func:`run_agent_loop` is a function of the run's input, the state it appends to, its
callbacks (:class:`LoopConfig`: the model stream, the converters, the tool hooks, the
queues), ``emit`` and the cancel token; it knows nothing of the :class:`.agent.Agent`
that builds them.
"""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

import attrs

from ..cancel import CancelToken
from ..events import (
    AgentEnd,
    AgentStart,
    DoneEvent,
    ErrorEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    StartEvent,
    TurnEnd,
    TurnStart,
)
from ..llm.model import Context, Model, StreamOptions
from ..llm.stream import StreamFn, empty_message, guarded, stream
from ..messages import AssistantMessage, Usage
from .context import ConvertMemo, ConvertToLlm, RepairMemo, TransformContext, repair_for_provider
from .queues import QueuedMessage
from .state import AgentState
from .tool_exec import AfterToolCall, BeforeToolCall, Emit, ToolBatch

# How long a provider gets to finish by itself after an abort before it is cut off.
ABORT_GRACE_S = 0.05


def _finished_answer(messages: list[Any]) -> bool:
    last = messages[-1] if messages else None
    return last is not None and getattr(last, "role", None) == "assistant" \
        and last.stop_reason not in ("error", "aborted", "toolUse")


@attrs.define
class LoopConfig:
    """What a run calls out to."""

    stream_fn: StreamFn
    convert_to_llm: ConvertToLlm
    resolve_api_key: Callable[[Model], Awaitable[str | None]]
    take_steering: Callable[[], Awaitable[list[QueuedMessage]]]  # messages to deliver after this turn
    take_follow_up: Callable[[], Awaitable[list[QueuedMessage]]]  # messages for when the agent would stop
    delivered: Callable[[QueuedMessage], None] = lambda item: None  # a taken message is in the transcript
    transform_context: TransformContext | None = None
    before_tool_call: BeforeToolCall | None = None
    after_tool_call: AfterToolCall | None = None
    session_id: str | None = None


async def run_agent_loop(prompts: list[Any], state: AgentState, config: LoopConfig, emit: Emit,
                         cancel: CancelToken) -> list[Any]:
    """Run until the agent stops; ``state.messages`` grows as it goes. Returns the messages
    the run added (the prompts, assistant messages, tool results, delivered queue items)."""
    run = _Run(state, config, emit, cancel)
    await run.run(prompts)
    return run.new_messages


class _Run:
    def __init__(self, state: AgentState, config: LoopConfig, emit: Emit, cancel: CancelToken) -> None:
        self.state = state
        self.config = config
        self.cancel = cancel
        self.emit = emit
        self.new_messages: list[Any] = []
        self.repair_memo = RepairMemo()
        self.convert_memo = ConvertMemo()

    async def deliver(self, message: Any, queued: QueuedMessage | None = None) -> None:
        await self.emit(MessageStart(message=message))
        self.state.messages.append(message)
        self.new_messages.append(message)
        if queued is not None:
            self.config.delivered(queued)
        await self.emit(MessageEnd(message=message))

    async def run(self, prompts: list[Any]) -> None:
        await self.emit(AgentStart())
        await self.emit(TurnStart())
        for message in prompts:
            await self.deliver(message)
        pending = await self.config.take_steering()
        if not prompts and not pending and _finished_answer(self.state.messages):
            pending = await self.config.take_follow_up()
        first_turn = True
        while True:
            has_tool_calls = True
            while has_tool_calls or pending:
                if self.cancel.cancelled:
                    await self.emit(AgentEnd(messages=self.new_messages))
                    return
                if not first_turn:
                    await self.emit(TurnStart())
                first_turn = False
                if not self.cancel.cancelled:  # else they stay in flight and go back
                    for item in pending:
                        await self.deliver(item.message, item)
                pending = []
                assistant = await self.stream_assistant()
                if assistant.stop_reason in ("error", "aborted"):
                    await self.emit(TurnEnd(message=assistant, tool_results=[]))
                    await self.emit(AgentEnd(messages=self.new_messages))
                    return
                calls = assistant.tool_calls()
                has_tool_calls = bool(calls)
                results = []
                stopped = False
                if calls:
                    batch = ToolBatch(
                        assistant,
                        tools={t.name: t for t in self.state.tools},
                        emit=self.emit,
                        cancel=self.cancel,
                        pending=self.state.pending_tool_calls,
                        before=self.config.before_tool_call,
                        after=self.config.after_tool_call,
                    )
                    results = await batch.run()
                    stopped = batch.stopped
                    for result in results:
                        await self.deliver(result)
                await self.emit(TurnEnd(message=assistant, tool_results=results))
                if self.cancel.cancelled:
                    await self.emit(AgentEnd(messages=self.new_messages))
                    return
                if stopped or self.state.stop_reason == "rejected":  # the user rejected a call (of this run
                    self.state.stop_reason = "rejected"  # or of a subagent's) and stopped: no further model request
                    await self.emit(AgentEnd(messages=self.new_messages, stop_reason="rejected"))
                    return
                pending = await self.config.take_steering()
            pending = await self.config.take_follow_up()
            if not pending:
                break
        await self.emit(AgentEnd(messages=self.new_messages))

    async def build_context(self) -> Context:
        config = self.config
        messages = list(self.state.messages)
        if config.transform_context is not None:
            messages = await config.transform_context(messages, self.cancel)
        llm_messages = repair_for_provider(self.convert_memo.convert(config.convert_to_llm, messages), self.repair_memo)
        return Context(
            system_prompt=self.state.system_prompt,
            messages=llm_messages,
            tools=[tool.spec() for tool in self.state.tools],
        )

    async def stream_assistant(self) -> AssistantMessage:
        config, model = self.config, self.state.model
        context = await self.build_context()
        options = StreamOptions(
            api_key=await config.resolve_api_key(model) if not self.cancel.cancelled else None,
            thinking_level=self.state.thinking_level,
            session_id=config.session_id,
        )
        holder: dict[str, AssistantMessage] = {}
        reported = [(0, 0, 0, 0)]  # the usage the last message_update carried

        def new_usage() -> Usage | None:
            """The partial's usage when the provider reported (more of) it since the last update."""
            usage: Usage | None = getattr(holder.get("partial"), "usage", None)
            if usage is None:
                return None
            now = (usage.input, usage.output, usage.cache_read, usage.cache_write)
            if now == reported[0]:
                return None
            reported[0] = now
            return attrs.evolve(usage)

        async def consume() -> None:
            events = config.stream_fn(model, context, options, self.cancel)
            if config.stream_fn is not stream:  # the default seam already never raises
                events = guarded(events, model, self.cancel)
            async for event in events:
                if isinstance(event, StartEvent):
                    assert event.partial is not None  # in-process, a stream's start carries its message
                    holder["partial"] = event.partial
                    self.state.streaming_message = event.partial
                    await self.emit(MessageStart(message=event.partial))
                elif isinstance(event, DoneEvent):
                    holder["final"] = event.message
                elif isinstance(event, ErrorEvent):
                    holder["final"] = event.error
                else:
                    await self.emit(MessageUpdate(assistant_message_event=event, message=holder.get("partial"),
                                                  usage=new_usage()))

        if self.cancel.cancelled:
            holder["final"] = empty_message(model)
        else:
            await self._consume_until_cancelled(consume)
        final = holder.get("final")
        if final is None:  # cut off after the abort grace period
            final = holder.get("partial") or empty_message(model)
            final.stop_reason = "aborted"
            final.error_message = "Request was aborted"
        if final.stop_reason == "pending":
            final.stop_reason = "aborted" if self.cancel.cancelled else "error"
            final.error_message = final.error_message or "stream ended while pending"
        if final.stop_reason == "aborted" and not final.error_message:
            final.error_message = "Request was aborted"
        if final.stop_reason == "error":
            self.state.error = final.error_message
        self.state.streaming_message = None
        if "partial" not in holder:
            await self.emit(MessageStart(message=final))
        self.state.messages.append(final)
        self.new_messages.append(final)
        await self.emit(MessageEnd(message=final))
        return final

    async def _consume_until_cancelled(self, consume: Callable[[], Awaitable[None]]) -> None:
        task = asyncio.ensure_future(consume())
        cancelled = asyncio.ensure_future(self.cancel.wait())
        try:
            await asyncio.wait({task, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                await asyncio.wait({task}, timeout=ABORT_GRACE_S)
            if not task.done():
                task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                if not self.cancel.cancelled:
                    raise
        finally:
            cancelled.cancel()
