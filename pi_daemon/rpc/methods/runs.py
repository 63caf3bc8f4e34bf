"""Runs: start one, feed it, stop it (``prompt``, ``steer``, ``followUp``, ``abort``, queues, ``bash``).

Typed text goes through the slash commands first (:func:`pi_daemon.host.commands.parse_input`): a
template or skill is expanded, a built-in command runs at once and never reaches the
model, an unknown ``/name`` is refused. The editor context of a prompt is rendered after
its text (:func:`.changes.with_context`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ...messages import ImageContent
from .. import types as t
from ...wire.errors import (
    AgentBusy,
    InvalidParams,
    InvalidState,
    ModelUnavailableError,
    SessionNotFoundError,
    SessionWriteFailed,
    UnknownCommandError,
)
from ..registry import method
from .changes import with_context

if TYPE_CHECKING:
    from ..context import Context

_RUN_ERRORS = (SessionNotFoundError, AgentBusy, ModelUnavailableError, SessionWriteFailed)
_TYPED_ERRORS = (UnknownCommandError, InvalidParams)


def _images(images: list[t.Image] | None) -> list[ImageContent] | None:
    if not images:
        return None
    return [ImageContent(data=i.data, mime_type=i.mime_type) for i in images]


@method("prompt", params=t.PromptParams, result=t.PromptResult, errors=(*_RUN_ERRORS, *_TYPED_ERRORS, InvalidState),
        summary="start a run, or queue while one runs")
async def prompt(ctx: "Context", p: t.PromptParams) -> t.PromptResult:
    from ...host.commands import command_record, parse_input, run_builtin
    from ..extensions import command_outcome

    session = ctx.session(p.session_id, create=True)
    ctx.own(session)
    typed = parse_input(ctx.host, p.text)
    if typed.kind == "builtin":
        done = await run_builtin(ctx.host, session, typed)
        return t.PromptResult(disposition="command", command=command_outcome(ctx, done))
    disposition, queue_id = await session.prompt(await with_context(session, typed.text, p.context),
                                                 _images(p.images), p.streaming_behavior,
                                                 command_record(typed, p.text))
    return t.PromptResult(disposition=disposition, queue_id=queue_id)  # type: ignore[arg-type]


async def _enqueue(ctx: "Context", kind: Literal["steer", "followUp"], p: t.QueueParams) -> t.QueuedResult:
    from ...host.commands import command_record, parse_input

    session = ctx.session(p.session_id)
    ctx.own(session)
    typed = parse_input(ctx.host, p.text)
    if typed.kind == "builtin":
        raise InvalidParams(f"/{typed.name} is a built-in command: it runs at once, it cannot be queued; "
                            "send it with prompt")
    text = await with_context(session, typed.text, p.context)
    return t.QueuedResult(queue_id=await session.enqueue(kind, text, _images(p.images), command_record(typed, p.text)))


@method("steer", params=t.QueueParams, result=t.QueuedResult,
        errors=(SessionNotFoundError, *_TYPED_ERRORS, InvalidState),
        summary="queue a steering message")
async def steer(ctx: "Context", p: t.QueueParams) -> t.QueuedResult:
    return await _enqueue(ctx, "steer", p)


@method("followUp", params=t.QueueParams, result=t.QueuedResult,
        errors=(SessionNotFoundError, *_TYPED_ERRORS, InvalidState),
        summary="queue a follow-up message")
async def follow_up(ctx: "Context", p: t.QueueParams) -> t.QueuedResult:
    return await _enqueue(ctx, "followUp", p)


@method("abort", params=t.SessionRef, result=t.AbortResult, errors=(SessionNotFoundError,),
        summary="stop the current run")
async def abort(ctx: "Context", p: t.SessionRef) -> t.AbortResult:
    aborted, steering, follow_up = await ctx.session(p.session_id).stop()
    return t.AbortResult(aborted=aborted, steering=steering, follow_up=follow_up)


@method("clearQueue", params=t.SessionRef, result=t.ClearQueueResult, errors=(SessionNotFoundError,),
        summary="remove queued messages")
async def clear_queue(ctx: "Context", p: t.SessionRef) -> t.ClearQueueResult:
    steering, follow_up = await ctx.session(p.session_id).clear_queue()
    return t.ClearQueueResult(steering=steering, follow_up=follow_up)


@method("removeQueued", params=t.RemoveQueuedParams, result=t.RemovedResult, errors=(SessionNotFoundError,),
        summary="remove one queued message")
async def remove_queued(ctx: "Context", p: t.RemoveQueuedParams) -> t.RemovedResult:
    return t.RemovedResult(removed=await ctx.session(p.session_id).remove_queued(p.queue_id))


@method("continue", params=t.SessionRef, result=t.ContinueResult, errors=(*_RUN_ERRORS, InvalidState),
        summary="resume from the transcript")
async def continue_(ctx: "Context", p: t.SessionRef) -> t.ContinueResult:
    await ctx.session(p.session_id).continue_()
    return t.ContinueResult()


@method("waitForIdle", params=t.SessionRef, result=t.WaitForIdleResult, errors=(SessionNotFoundError,),
        summary="answer once the session has settled")
async def wait_for_idle(ctx: "Context", p: t.SessionRef) -> t.WaitForIdleResult:
    session = ctx.session(p.session_id)
    await session.wait_settled()
    return t.WaitForIdleResult(aborted=session.agent.last_run_aborted)


@method("bash", params=t.BashParams, result=t.BashResult, errors=(SessionNotFoundError, AgentBusy),
        summary="run a shell command for the user")
async def bash(ctx: "Context", p: t.BashParams) -> t.BashResult:
    session = ctx.session(p.session_id, create=True)
    message = await session.run_bash(p.command, p.exclude_from_context, ctx.request_id, p.timeout)
    return t.BashResult(output=message.output, cancelled=message.cancelled, truncated=message.truncated,
                        exit_code=message.exit_code, full_output_path=message.full_output_path)


@method("abortBash", params=t.SessionRef, result=t.AbortBashResult, errors=(SessionNotFoundError,),
        summary="stop the user's shell command")
async def abort_bash(ctx: "Context", p: t.SessionRef) -> t.AbortBashResult:
    return t.AbortBashResult(aborted=ctx.session(p.session_id).abort_bash())
