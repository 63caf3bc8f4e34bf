"""Runs: start one, feed it, stop it (``prompt``, ``steer``, ``followUp``, ``abort``, queues, ``bash``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...messages import ImageContent
from .. import types as t
from ..errors import AgentBusy, InvalidState, ModelUnavailableError, SessionNotFoundError, SessionWriteFailed
from ..registry import method

if TYPE_CHECKING:
    from ..server import Daemon

_RUN_ERRORS = (SessionNotFoundError, AgentBusy, ModelUnavailableError, SessionWriteFailed)


def _images(images: list[t.Image] | None) -> list[ImageContent] | None:
    if not images:
        return None
    return [ImageContent(data=i.data, mime_type=i.mime_type) for i in images]


@method("prompt", params=t.PromptParams, result=t.PromptResult, errors=_RUN_ERRORS,
        summary="start a run, or queue while one runs")
async def prompt(daemon: Daemon, p: t.PromptParams) -> t.PromptResult:
    session = daemon.sessions.get(p.session_id, create=True)
    disposition, queue_id = await session.prompt(p.text, _images(p.images), p.streaming_behavior)
    return t.PromptResult(disposition=disposition, queue_id=queue_id)  # type: ignore[arg-type]


@method("steer", params=t.QueueParams, result=t.QueuedResult, errors=(SessionNotFoundError,),
        summary="queue a steering message")
async def steer(daemon: Daemon, p: t.QueueParams) -> t.QueuedResult:
    session = daemon.sessions.get(p.session_id)
    return t.QueuedResult(queue_id=await session.enqueue("steer", p.text, _images(p.images)))


@method("followUp", params=t.QueueParams, result=t.QueuedResult, errors=(SessionNotFoundError,),
        summary="queue a follow-up message")
async def follow_up(daemon: Daemon, p: t.QueueParams) -> t.QueuedResult:
    session = daemon.sessions.get(p.session_id)
    return t.QueuedResult(queue_id=await session.enqueue("followUp", p.text, _images(p.images)))


@method("abort", params=t.SessionRef, result=t.AbortResult, errors=(SessionNotFoundError,),
        summary="stop the current run")
async def abort(daemon: Daemon, p: t.SessionRef) -> t.AbortResult:
    return t.AbortResult(aborted=await daemon.sessions.get(p.session_id).abort())


@method("clearQueue", params=t.SessionRef, result=t.ClearQueueResult, errors=(SessionNotFoundError,),
        summary="remove queued messages")
async def clear_queue(daemon: Daemon, p: t.SessionRef) -> t.ClearQueueResult:
    steering, follow_up = await daemon.sessions.get(p.session_id).clear_queue()
    return t.ClearQueueResult(steering=steering, follow_up=follow_up)


@method("removeQueued", params=t.RemoveQueuedParams, result=t.RemovedResult, errors=(SessionNotFoundError,),
        summary="remove one queued message")
async def remove_queued(daemon: Daemon, p: t.RemoveQueuedParams) -> t.RemovedResult:
    return t.RemovedResult(removed=await daemon.sessions.get(p.session_id).remove_queued(p.queue_id))


@method("continue", params=t.SessionRef, result=t.ContinueResult, errors=(*_RUN_ERRORS, InvalidState),
        summary="resume from the transcript")
async def continue_(daemon: Daemon, p: t.SessionRef) -> t.ContinueResult:
    await daemon.sessions.get(p.session_id).continue_()
    return t.ContinueResult()


@method("waitForIdle", params=t.SessionRef, result=t.WaitForIdleResult, errors=(SessionNotFoundError,),
        summary="answer once the session has settled")
async def wait_for_idle(daemon: Daemon, p: t.SessionRef) -> t.WaitForIdleResult:
    session = daemon.sessions.get(p.session_id)
    await session.wait_settled()
    return t.WaitForIdleResult(aborted=session.agent.last_run_aborted)


@method("bash", params=t.BashParams, result=t.BashResult, errors=(SessionNotFoundError, AgentBusy),
        summary="run a shell command for the user")
async def bash(daemon: Daemon, p: t.BashParams) -> t.BashResult:
    session = daemon.sessions.get(p.session_id, create=True)
    message = await session.run_bash(p.command, p.exclude_from_context, daemon.protocol.msg_id, p.timeout)
    return t.BashResult(output=message.output, cancelled=message.cancelled, truncated=message.truncated,
                        exit_code=message.exit_code, full_output_path=message.full_output_path)


@method("abortBash", params=t.SessionRef, result=t.AbortResult, errors=(SessionNotFoundError,),
        summary="stop the user's shell command")
async def abort_bash(daemon: Daemon, p: t.SessionRef) -> t.AbortResult:
    return t.AbortResult(aborted=daemon.sessions.get(p.session_id).abort_bash())
