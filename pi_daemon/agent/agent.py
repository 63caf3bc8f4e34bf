"""The Agent: state, input (prompt / steer / follow-up / continue), abort and observers.

The agent runs in-process with no transport: a daemon, a test or a script drives it
directly. Observers subscribe and are awaited in order for every event, so each sees
a consistent state and a slow observer slows the agent instead of piling up events.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Awaitable, Callable, Iterable, Sequence

from ..cancel import CancelToken
from ..events import Observers, QueueItem, QueueUpdate
from ..llm.model import Model, ThinkingLevel
from ..llm.stream import StreamFn, stream
from ..messages import ImageContent, TextContent, UserMessage
from ..tools.base import Tool
from .context import ConvertToLlm, TransformContext, default_convert_to_llm
from .loop import LoopConfig, run_agent_loop
from .queues import MessageQueue, QueuedMessage, QueueMode
from .state import AgentState
from .tool_exec import AfterToolCall, BeforeToolCall

log = logging.getLogger(__name__)

ApiKeyResolver = Callable[[Model], Awaitable[str | None] | str | None]


class AgentError(Exception):
    """A request the agent cannot take in its current state; the text says why."""


class AgentBusy(AgentError):
    pass


def make_user_message(text: str, images: Sequence[ImageContent] | None = None) -> UserMessage:
    if not images:
        return UserMessage(content=text)
    return UserMessage(content=[TextContent(text=text), *images])


class Agent:
    def __init__(
        self,
        model: Model,
        *,
        system_prompt: str = "",
        tools: Iterable[Tool] = (),
        messages: Iterable[Any] = (),
        thinking_level: ThinkingLevel = "off",
        stream_fn: StreamFn = stream,
        convert_to_llm: ConvertToLlm = default_convert_to_llm,
        transform_context: TransformContext | None = None,
        before_tool_call: BeforeToolCall | None = None,
        after_tool_call: AfterToolCall | None = None,
        api_key: ApiKeyResolver | None = None,
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
    ) -> None:
        self.state = AgentState(
            model=model,
            system_prompt=system_prompt,
            thinking_level=thinking_level,
            tools=list(tools),
            messages=list(messages),
        )
        self.stream_fn = stream_fn
        self.convert_to_llm = convert_to_llm
        self.transform_context = transform_context
        self.before_tool_call = before_tool_call
        self.after_tool_call = after_tool_call
        self.api_key = api_key
        self.session_id = session_id
        self.steering = MessageQueue("steer", steering_mode)
        self.follow_ups = MessageQueue("followUp", follow_up_mode)
        self._in_flight: list[QueuedMessage] = []
        self.observers = Observers()
        self.subscribe = self.observers.subscribe
        self.emit = self.observers.emit
        self._run_task: asyncio.Task[None] | None = None
        self._cancel: CancelToken | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.last_run_aborted = False

    # --- input ----------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._run_task is not None and not self._run_task.done()

    def prompt(
        self, input: str | Any | list[Any], images: Sequence[ImageContent] | None = None
    ) -> asyncio.Task[None]:
        """Start a run with ``input``; returns the run's task (await it to wait for the end).

        Refused with AgentBusy while a run is active: use steer or follow_up then.
        """
        if self.is_running:
            raise AgentBusy(
                "the agent is already running; send the message as steer or followUp, "
                "or abort first"
            )
        if isinstance(input, str):
            messages = [make_user_message(input, images)]
        elif isinstance(input, list):
            messages = list(input)
        else:
            messages = [input]
        return self._start(messages)

    def continue_(self) -> asyncio.Task[None]:
        """Resume from the transcript: answer its last user message or tool result, or
        ask again after an assistant message that failed, was aborted, or whose tool
        calls never got results (the missing ones are answered as interrupted).

        After a finished assistant answer, queued steering (then follow-up) messages are
        delivered instead; with nothing queued it is refused.
        """
        if self.is_running:
            raise AgentBusy("the agent is already running")
        messages = self.state.messages
        if not messages:
            raise AgentError("there is nothing to continue: the conversation is empty")
        last = messages[-1]
        finished = getattr(last, "role", None) == "assistant" and last.stop_reason not in ("error", "aborted", "toolUse")
        if finished and not len(self.steering) and not len(self.follow_ups):
            raise AgentError(
                "cannot continue: the last message is the assistant's finished answer and nothing is queued"
            )
        return self._start([])

    async def steer(
        self, input: str | Any, images: Sequence[ImageContent] | None = None, queue_id: str | None = None
    ) -> QueuedMessage:
        """Queue a message for delivery after the current turn's tool calls."""
        return await self._enqueue(self.steering, input, images, queue_id)

    async def follow_up(
        self, input: str | Any, images: Sequence[ImageContent] | None = None, queue_id: str | None = None
    ) -> QueuedMessage:
        """Queue a message for delivery when the agent would otherwise stop."""
        return await self._enqueue(self.follow_ups, input, images, queue_id)

    async def _enqueue(self, queue: MessageQueue, input: str | Any, images: Sequence[ImageContent] | None,
                       queue_id: str | None) -> QueuedMessage:
        message = make_user_message(input, images) if isinstance(input, str) else input
        item = queue.push(message, queue_id)
        await self.emit_queue_update()
        return item

    async def clear_queues(self) -> tuple[list[QueuedMessage], list[QueuedMessage]]:
        steering, follow_ups = self.steering.clear(), self.follow_ups.clear()
        if steering or follow_ups:
            await self.emit_queue_update()
        return steering, follow_ups

    async def remove_queued(self, queue_id: str) -> QueuedMessage | None:
        item = self.steering.remove(queue_id) or self.follow_ups.remove(queue_id)
        if item is not None:
            await self.emit_queue_update()
        return item

    async def emit_queue_update(self) -> None:
        items = [QueueItem(queue_id=q.id, kind=q.kind, text=q.text) for q in (*self.steering, *self.follow_ups)]
        await self.emit(QueueUpdate(steering=self.steering.texts(), follow_up=self.follow_ups.texts(), items=items))

    def set_queue_modes(self, steering: QueueMode | None = None, follow_up: QueueMode | None = None) -> None:
        if steering is not None:
            self.steering.mode = steering
        if follow_up is not None:
            self.follow_ups.mode = follow_up

    # --- what the loop is given (see _loop_config) ----------------------------------------

    async def take_steering(self) -> list[QueuedMessage]:
        return await self._take(self.steering)

    async def take_follow_up(self) -> list[QueuedMessage]:
        return await self._take(self.follow_ups)

    async def _take(self, queue: MessageQueue) -> list[QueuedMessage]:
        if self._cancel is not None and self._cancel.cancelled:
            return []
        items = queue.drain()
        if items:
            self._in_flight.extend(items)
            await self.emit_queue_update()
        return items

    def mark_delivered(self, item: QueuedMessage) -> None:
        if item in self._in_flight:
            self._in_flight.remove(item)

    async def resolve_api_key(self, model: Model) -> str | None:
        if self.api_key is None:
            return None
        value = self.api_key(model)
        return await value if inspect.isawaitable(value) else value

    # --- runs -------------------------------------------------------------------------

    def _loop_config(self) -> LoopConfig:
        """The loop's callbacks, as this agent is configured when the run starts."""
        return LoopConfig(stream_fn=self.stream_fn, convert_to_llm=self.convert_to_llm,
                          transform_context=self.transform_context, before_tool_call=self.before_tool_call,
                          after_tool_call=self.after_tool_call, resolve_api_key=self.resolve_api_key,
                          take_steering=self.take_steering, take_follow_up=self.take_follow_up,
                          delivered=self.mark_delivered, session_id=self.session_id)

    def _start(self, messages: list[Any]) -> asyncio.Task[None]:
        cancel = CancelToken()
        self._cancel = cancel
        self._idle.clear()
        self.state.is_streaming = True
        self.state.error = None
        self.state.stop_reason = None
        self.last_run_aborted = False
        self._run_task = asyncio.ensure_future(self._run(messages, cancel))
        return self._run_task

    async def _run(self, messages: list[Any], cancel: CancelToken) -> None:
        try:
            await asyncio.sleep(0)  # let whoever started the run answer its caller first
            await run_agent_loop(messages, self.state, self._loop_config(), self.emit, cancel)
        except Exception as exc:
            log.exception("agent run failed")
            self.state.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.last_run_aborted = cancel.cancelled
            self.state.is_streaming = False
            self.state.streaming_message = None
            self.state.pending_tool_calls.clear()
            await self._restore_in_flight()
            self._idle.set()

    async def _restore_in_flight(self) -> None:
        if not self._in_flight:
            return
        items, self._in_flight = self._in_flight, []
        for queue in (self.steering, self.follow_ups):
            queue.restore([item for item in items if item.kind == queue.kind])
        await self.emit_queue_update()

    def stop_after_tools(self) -> None:
        """End the current run once its running tool calls are done, as the user's ``reject_and_stop``
        does (a subagent's, reported by its ``task`` call)."""
        if self.is_running:
            self.state.stop_reason = "rejected"

    def request_abort(self) -> None:
        """Stop the current run without waiting for it (callable from inside one of its events)."""
        if self.is_running and self._cancel is not None:
            self._cancel.cancel("aborted")

    async def abort(self) -> bool:
        """Stop the current run and wait until it has stopped; False when nothing ran."""
        if not self.is_running or self._cancel is None:
            return False
        self._cancel.cancel("aborted")
        await self.wait_for_idle()
        return True

    async def wait_for_idle(self) -> None:
        await self._idle.wait()
