"""Executing the tool calls of one assistant message.

Calls run concurrently, except that a tool marked ``sequential`` runs alone (calls
before it finish first; calls after it wait). ``tool_execution_end`` is emitted in
completion order; the tool-result messages are returned in call order. Every failure
— unknown tool, invalid arguments, a blocking hook, a raising tool, an abort — becomes
an ``isError`` result whose text tells the model what happened.

The permission hook's answer can steer a call: the user's refusal is the call's result
(``Declined``); one that stops the run (``reject_and_stop``) leaves the message's calls
not yet allowed unrun and marks the batch ``stopped``; an allow with edited arguments
re-announces the call (``tool_execution_start`` with ``editedByUser``), validates the
edit and hands it back to the hook to be checked again before it runs.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable

import attrs

from ..cancel import CancelToken, Cancelled
from ..events import ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate
from ..guard.permissions import Declined, UserEdit, what_ran
from ..messages import AssistantMessage, TextContent, ToolCall, ToolResult, ToolResultMessage
from ..tools.base import Tool
from ..tools.validation import ToolArgumentError, validate_arguments

log = logging.getLogger(__name__)

Emit = Callable[[Any], Awaitable[None]]

TRUNCATED_TEXT = (
    "This tool call was not executed: the response was cut off at the output token "
    "limit, so its arguments may be incomplete. Issue the call again, complete."
)
ABORTED_TEXT = "Tool execution was aborted by the user."
NOT_RUN_STOPPED_TEXT = "This call was not run: the user rejected another call of this message and stopped the run."
STOPPED_LINE = "[stopped by the user]"


def stopped(partial: ToolResult | None) -> ToolResult:
    """An aborted call's result: what it had shown (its latest partial result), then that it was stopped."""
    if partial is None:
        return ToolResult.text(ABORTED_TEXT)
    content = list(partial.content)
    if content and isinstance(content[-1], TextContent):
        text = content[-1].text
        separator = "" if not text or text.endswith("\n") else "\n"
        content[-1] = TextContent(text=text + separator + STOPPED_LINE)
    else:
        content.append(TextContent(text=STOPPED_LINE))
    return ToolResult(content=content, details=partial.details, is_error=True)


def truncated_text(call: ToolCall) -> str:
    """What the model is told of a call cut off at the output limit, with what it had sent."""
    received = call.received_arguments
    if received is None:
        return TRUNCATED_TEXT
    return f"{TRUNCATED_TEXT}\nThe arguments as received ({len(received)} characters, cut off):\n{received}"


@attrs.define
class ToolCallContext:
    tool_call: ToolCall
    args: dict[str, Any]
    assistant_message: AssistantMessage
    tool: Any = None  # the tool called
    # set by a before hook that asked the user: what the call would leave in its file (``Tool.propose``),
    # and the text the user accepted instead of it (then the tool writes that: ``Tool.execute_accepted``)
    proposal: Any = None
    accepted: str | None = None
    # set by a before hook whose user allowed the call with other arguments (``edit_outcome``: the allow
    # given); the edited call then carries ``user_edit`` when it is handed back to be checked again
    edited_args: Any = None
    edit_outcome: str = ""
    user_edit: UserEdit | None = None


BeforeToolCall = Callable[[ToolCallContext, CancelToken], Awaitable[str | Declined | None]]
"""Return a reason string to block the call, the user's refusal, or None to let it run."""

AfterToolCall = Callable[[ToolCallContext, ToolResult, bool], Awaitable[ToolResult | None]]
"""Return a replacement result (its ``is_error`` decides the flag), or None to keep it."""


@attrs.define
class _Outcome:
    result: ToolResult
    is_error: bool
    duration_ms: float | None = None


class ToolBatch:
    def __init__(
        self,
        assistant: AssistantMessage,
        *,
        tools: dict[str, Tool],
        emit: Emit,
        cancel: CancelToken,
        pending: set[str],
        before: BeforeToolCall | None = None,
        after: AfterToolCall | None = None,
    ) -> None:
        self.assistant = assistant
        self.tools = tools
        self.emit = emit
        self.cancel = cancel
        self.pending = pending
        self.before = before
        self.after = after
        # what the hook's asking races: the run's abort, or the user stopping the run at another call
        self.halt = CancelToken()
        self.stopped = False  # the user answered reject_and_stop

    async def run(self) -> list[ToolResultMessage]:
        remove = self.cancel.on_cancel(lambda: self.halt.cancel(self.cancel.reason or "aborted"))
        try:
            return await self._run()
        finally:
            remove()

    async def _run(self) -> list[ToolResultMessage]:
        calls = self.assistant.tool_calls()
        outcomes: dict[str, _Outcome] = {}
        if self.assistant.stop_reason == "length":
            for call in calls:
                await self.emit(ToolExecutionStart(call.id, call.name, call.arguments))
                outcomes[call.id] = _Outcome(ToolResult.text(truncated_text(call)), True)
                await self._end(call, outcomes[call.id])
        else:
            for group in self._groups(calls):
                await self._run_group(group, outcomes)
        return [
            ToolResultMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=outcomes[call.id].result.content,
                details=outcomes[call.id].result.details,
                is_error=outcomes[call.id].is_error,
            )
            for call in calls
        ]

    def _groups(self, calls: list[ToolCall]) -> list[list[ToolCall]]:
        groups: list[list[ToolCall]] = []
        for call in calls:
            if not groups or self._is_sequential(call) or self._is_sequential(groups[-1][0]):
                groups.append([call])
            else:
                groups[-1].append(call)
        return groups

    def _is_sequential(self, call: ToolCall) -> bool:
        tool = self.tools.get(call.name)
        return tool is not None and tool.sequential

    async def _run_group(self, group: list[ToolCall], outcomes: dict[str, _Outcome]) -> None:
        for call in group:
            self.pending.add(call.id)
            await self.emit(ToolExecutionStart(call.id, call.name, call.arguments))
        tasks = [asyncio.ensure_future(self._run_one(call, outcomes)) for call in group]
        remove = self.cancel.on_cancel(lambda: [t.cancel() for t in tasks])
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            remove()
        for call, result in zip(group, results):
            if call.id not in outcomes:  # cancelled, or failed, before it could record anything
                failed = isinstance(result, Exception) and not isinstance(result, Cancelled)
                text = f"Tool {call.name!r} failed: {type(result).__name__}: {result}" if failed else ABORTED_TEXT
                outcomes[call.id] = _Outcome(ToolResult.text(text), True)
                await self._end(call, outcomes[call.id])

    async def _run_one(self, call: ToolCall, outcomes: dict[str, _Outcome]) -> None:
        outcome = await self._execute(call)
        outcomes[call.id] = outcome
        await self._end(call, outcome)

    async def _end(self, call: ToolCall, outcome: _Outcome) -> None:
        self.pending.discard(call.id)
        await self.emit(
            ToolExecutionEnd(
                call.id, call.name, outcome.result, outcome.is_error, outcome.duration_ms
            )
        )

    async def _execute(self, call: ToolCall) -> _Outcome:
        tool = self.tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self.tools)) or "none"
            return _Outcome(
                ToolResult.text(f"Tool {call.name!r} does not exist. Available tools: {names}."),
                True,
            )
        try:
            args = validate_arguments(tool.parameters, call.arguments)
        except ToolArgumentError as exc:
            return _Outcome(
                ToolResult.text(f"Tool {call.name!r} was not run because of {exc}"), True
            )
        context = ToolCallContext(call, args, self.assistant, tool)
        refused = await self._check(context)
        if refused is None and context.edited_args is not None:
            edited = context.edited_args
            await self.emit(ToolExecutionStart(call.id, call.name, edited, edited_by_user=True))
            try:
                args = validate_arguments(tool.parameters, edited)
            except ToolArgumentError as exc:
                return _Outcome(ToolResult.text(f"The user's edit of this call was not run because of {exc}"),
                                True)
            context = ToolCallContext(call, args, self.assistant, tool,
                                      user_edit=UserEdit(context.edit_outcome, context.args))
            refused = await self._check(context)
        if refused is not None:
            return refused
        result, is_error, duration = await self._call(tool, call, context)
        if context.user_edit is not None:
            result = _prefixed(result, what_ran(context.args))
        return _Outcome(result, is_error, duration)

    async def _check(self, context: ToolCallContext) -> _Outcome | None:
        """The before hook's verdict as the call's outcome, or None: it may run."""
        if self.before is None:
            return None
        name = context.tool_call.name
        try:
            reason = await self.before(context, self.halt)
        except Exception as exc:  # noqa: BLE001 - a call that could not be checked is not run
            log.warning("checking %s raised", name, exc_info=True)
            reason = f"it could not be checked ({type(exc).__name__}: {exc}); it was not run"
        if isinstance(reason, Declined):
            if reason.stop and not self.halt.cancelled:
                self.stopped = True
                self.halt.cancel("rejected")  # the calls still being asked about are withdrawn, not run
            return _Outcome(ToolResult.text(reason.text), True)
        if self.halt.cancelled and not self.cancel.cancelled:
            return _not_run()
        if reason:
            return _Outcome(ToolResult.text(f"Tool call blocked: {reason}"), True)
        return None

    async def _call(self, tool: Tool, call: ToolCall, context: ToolCallContext) -> tuple[ToolResult, bool, float]:
        args = context.args
        shown = args if context.user_edit is not None else call.arguments
        latest: ToolResult | None = None

        async def on_update(partial: ToolResult) -> None:
            nonlocal latest
            latest = partial
            await self.emit(ToolExecutionUpdate(call.id, call.name, shown, partial))

        started = time.monotonic()
        try:
            self.cancel.raise_if_cancelled()
            if context.accepted is not None and context.proposal is not None:
                value = await tool.execute_accepted(call.id, args, context.proposal, context.accepted,
                                                    self.cancel, on_update)
            else:
                value = await tool.execute(call.id, args, self.cancel, on_update)
            result = ToolResult.text(value) if isinstance(value, str) else value
            is_error = bool(result.is_error)
        except (Cancelled, asyncio.CancelledError):
            if not self.cancel.cancelled:
                raise
            result, is_error = stopped(latest), True
        except Exception as exc:  # noqa: BLE001 - a raising tool is an error result
            log.debug("tool %s raised", call.name, exc_info=True)
            result, is_error = ToolResult.text(f"{type(exc).__name__}: {exc}"), True
        duration = (time.monotonic() - started) * 1000
        if self.after is not None and not self.cancel.cancelled:
            replaced = await self.after(context, result, is_error)
            if replaced is not None:
                result, is_error = replaced, bool(replaced.is_error)
        return result, is_error, duration


def _not_run() -> _Outcome:
    return _Outcome(ToolResult.text(NOT_RUN_STOPPED_TEXT), True)


def _prefixed(result: ToolResult, line: str) -> ToolResult:
    """``result`` with ``line`` before its text."""
    content = list(result.content)
    if content and isinstance(content[0], TextContent):
        content[0] = TextContent(text=f"{line}\n{content[0].text}")
    else:
        content.insert(0, TextContent(text=line))
    return ToolResult(content=content, details=result.details, is_error=result.is_error)
