"""Method handlers: each takes the daemon and its structured params, returns its result.

Handlers raise :class:`RpcError` (or the session layer's errors, mapped by the
dispatcher); they never see JSON-RPC framing or pygls.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Awaitable, Callable

from ..converter import to_wire
from ..messages import ImageContent
from . import types as t
from .change_methods import CHANGE_HANDLERS, with_context
from .errors import INVALID_PARAMS, INVALID_STATE, RpcError
from .extension_methods import EXTENSION_HANDLERS, command_record, mcp_configs, parse_input, run_builtin
from .initialize import initialize
from .session_methods import SESSION_HANDLERS
from .state import model_info, session_state

if TYPE_CHECKING:
    from .server import Daemon

Handler = Callable[["Daemon", object], Awaitable[object]]


def _images(images: list[t.Image] | None) -> list[ImageContent] | None:
    if not images:
        return None
    return [ImageContent(data=i.data, mime_type=i.mime_type) for i in images]


async def _initialize(daemon: "Daemon", p: t.InitializeParams) -> t.InitializeResult:
    result = initialize(p, daemon.client, daemon.max_frame_bytes)
    daemon.tools_workspace.allow(daemon.client.allowed_roots)
    loop = asyncio.get_running_loop()
    # Two turns of the loop: pygls sends this reply first, then the daemon may ask.
    loop.call_soon(loop.call_soon, daemon.trust.maybe_ask)
    daemon.background.start_soon()
    return result


async def _shutdown(daemon: "Daemon", p: t.Empty) -> t.Empty:
    await daemon.begin_shutdown()
    return t.Empty()


async def _exit(daemon: "Daemon", p: t.Empty) -> None:
    daemon.request_exit()


async def _session_new(daemon: "Daemon", p: t.SessionNewParams) -> t.SessionNewResult:
    servers = mcp_configs(p.mcp_servers, p.cwd or daemon.workspace)
    session = daemon.sessions.create(cwd=p.cwd, name=p.name, model=p.model, mcp_servers=servers)
    return t.SessionNewResult(session_id=session.id, file=session.file)


async def _prompt(daemon: "Daemon", p: t.PromptParams) -> t.PromptResult:
    session = daemon.sessions.get(p.session_id, create=True)
    typed = parse_input(daemon, p.text)
    if typed.kind == "builtin":
        return t.PromptResult(disposition="command", command=await run_builtin(daemon, session, typed))
    disposition, queue_id = await session.prompt(await with_context(session, typed.text, p.context), _images(p.images), p.streaming_behavior,
                                                 command_record(typed, p.text))
    return t.PromptResult(disposition=disposition, queue_id=queue_id)  # type: ignore[arg-type]


async def _enqueue(daemon: "Daemon", kind: str, p: t.QueueParams) -> t.QueuedResult:
    session = daemon.sessions.get(p.session_id)
    typed = parse_input(daemon, p.text)
    if typed.kind == "builtin":
        raise RpcError(INVALID_PARAMS, f"/{typed.name} is a built-in command: it runs at once, it cannot be "
                                       f"queued; send it with prompt")
    return t.QueuedResult(queue_id=await session.enqueue(kind, await with_context(session, typed.text, p.context), _images(p.images),
                                                         command_record(typed, p.text)))


async def _steer(daemon: "Daemon", p: t.QueueParams) -> t.QueuedResult:
    return await _enqueue(daemon, "steer", p)


async def _follow_up(daemon: "Daemon", p: t.QueueParams) -> t.QueuedResult:
    return await _enqueue(daemon, "followUp", p)


async def _abort(daemon: "Daemon", p: t.SessionRef) -> t.AbortResult:
    return t.AbortResult(aborted=await daemon.sessions.get(p.session_id).abort())


async def _clear_queue(daemon: "Daemon", p: t.SessionRef) -> t.ClearQueueResult:
    steering, follow_up = await daemon.sessions.get(p.session_id).clear_queue()
    return t.ClearQueueResult(steering=steering, follow_up=follow_up)


async def _remove_queued(daemon: "Daemon", p: t.RemoveQueuedParams) -> t.RemovedResult:
    return t.RemovedResult(removed=await daemon.sessions.get(p.session_id).remove_queued(p.queue_id))


async def _continue(daemon: "Daemon", p: t.SessionRef) -> t.ContinueResult:
    await daemon.sessions.get(p.session_id).continue_()
    return t.ContinueResult()


async def _wait_for_idle(daemon: "Daemon", p: t.SessionRef) -> t.WaitForIdleResult:
    session = daemon.sessions.get(p.session_id)
    await session.wait_settled()
    return t.WaitForIdleResult(aborted=session.agent.last_run_aborted)


async def _bash(daemon: "Daemon", p: t.BashParams) -> t.BashResult:
    session = daemon.sessions.get(p.session_id, create=True)
    message = await session.run_bash(p.command, p.exclude_from_context, daemon.protocol.msg_id, p.timeout)
    return t.BashResult(output=message.output, cancelled=message.cancelled, truncated=message.truncated,
                        exit_code=message.exit_code, full_output_path=message.full_output_path)


async def _abort_bash(daemon: "Daemon", p: t.SessionRef) -> t.AbortResult:
    return t.AbortResult(aborted=daemon.sessions.get(p.session_id).abort_bash())


async def _get_state(daemon: "Daemon", p: t.SessionRef) -> t.SessionState:
    return session_state(daemon, daemon.sessions.get(p.session_id, create=True))


async def _get_messages(daemon: "Daemon", p: t.SessionRef) -> t.GetMessagesResult:
    session = daemon.sessions.get(p.session_id, create=True)
    return t.GetMessagesResult(messages=[to_wire(m) for m in session.messages])


async def _list_models(daemon: "Daemon", p: t.Empty) -> t.ListModelsResult:
    usable, unavailable = [], {}
    for model in daemon.registry.models():
        info = model_info(daemon, model)
        if info.available:
            usable.append(info)
        else:
            group = unavailable.setdefault(model.provider, t.UnavailableModels(
                provider=model.provider, reason=info.unavailable_reason or "", models=[]))
            group.models.append(model.id)
    for disabled in daemon.registry.disabled:  # a models.json entry the daemon cannot serve
        unavailable.setdefault(disabled.provider, t.UnavailableModels(
            provider=disabled.provider, reason=disabled.reason, models=list(disabled.models)))
    return t.ListModelsResult(models=usable, unavailable=list(unavailable.values()))


async def _set_auto_retry(daemon: "Daemon", p: t.SetAutoRetryParams) -> t.AutoRetrySettings:
    if p.max_attempts is not None and p.max_attempts < 0:
        raise RpcError(INVALID_PARAMS, "invalid params: params.maxAttempts: must be 0 or more")
    if p.base_delay_ms is not None and p.base_delay_ms < 0:
        raise RpcError(INVALID_PARAMS, "invalid params: params.baseDelayMs: must be 0 or more")
    session = daemon.sessions.get(p.session_id, create=True)
    settings = session.set_auto_retry(p.enabled, p.max_attempts, p.base_delay_ms)
    return t.AutoRetrySettings(enabled=settings.enabled, max_attempts=settings.max_attempts,
                               base_delay_ms=settings.base_delay_ms)


async def _set_model(daemon: "Daemon", p: t.SetModelParams) -> t.SetModelResult:
    session = daemon.sessions.get(p.session_id, create=True)
    if session.busy:
        raise RpcError(INVALID_STATE, "cannot change the model while a run is active")
    model = await session.set_model(p.provider, p.model_id)
    return t.SetModelResult(model=model_info(daemon, model))


async def _set_thinking_level(daemon: "Daemon", p: t.SetThinkingLevelParams) -> t.SetThinkingLevelResult:
    session = daemon.sessions.get(p.session_id, create=True)
    return t.SetThinkingLevelResult(level=await session.set_thinking_level(p.level))


async def _set_queue_modes(daemon: "Daemon", p: t.SetQueueModesParams) -> t.SetQueueModesResult:
    session = daemon.sessions.get(p.session_id, create=True)
    session.set_queue_modes(p.steering, p.follow_up)
    agent = session.agent
    return t.SetQueueModesResult(steering=agent.steering.mode, follow_up=agent.follow_ups.mode)


HANDLERS: dict[str, Handler] = {
    **SESSION_HANDLERS,
    **EXTENSION_HANDLERS,
    **CHANGE_HANDLERS,
    "initialize": _initialize,
    "shutdown": _shutdown,
    "exit": _exit,
    "session/new": _session_new,
    "prompt": _prompt,
    "steer": _steer,
    "followUp": _follow_up,
    "abort": _abort,
    "clearQueue": _clear_queue,
    "removeQueued": _remove_queued,
    "continue": _continue,
    "waitForIdle": _wait_for_idle,
    "bash": _bash,
    "abortBash": _abort_bash,
    "getState": _get_state,
    "getMessages": _get_messages,
    "listModels": _list_models,
    "setModel": _set_model,
    "setThinkingLevel": _set_thinking_level,
    "setQueueModes": _set_queue_modes,
    "setAutoRetry": _set_auto_retry,
}
