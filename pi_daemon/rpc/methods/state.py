"""What a session holds and how it behaves: state, context messages, mode, queue modes, retry, compaction."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as t
from ...wire.errors import AgentBusy, InvalidState, SessionNotFoundError, SessionReadOnlyError, SessionWriteFailed
from ..params import not_negative
from ..registry import method
from ..state import session_state

if TYPE_CHECKING:
    from ..context import Context


@method("getState", params=t.SessionRef, result=t.SessionState, errors=(SessionNotFoundError,),
        summary="session state")
async def get_state(ctx: "Context", p: t.SessionRef) -> t.SessionState:
    return session_state(ctx, ctx.session(p.session_id, create=True))


@method("getMessages", params=t.SessionRef, result=t.GetMessagesResult, errors=(SessionNotFoundError,),
        summary="messages of the context")
async def get_messages(ctx: "Context", p: t.SessionRef) -> t.GetMessagesResult:
    session = ctx.session(p.session_id, create=True)
    return t.GetMessagesResult(messages=list(session.messages))


@method("setMode", params=t.SetModeParams, result=t.SetModeResult,
        errors=(SessionNotFoundError, SessionReadOnlyError, SessionWriteFailed),
        summary="choose the session's mode: plan, ask or auto-edit")
async def set_mode(ctx: "Context", p: t.SetModeParams) -> t.SetModeResult:
    session = ctx.session(p.session_id, create=True)
    return t.SetModeResult(mode=await session.set_mode(p.mode))


@method("setQueueModes", params=t.SetQueueModesParams, result=t.SetQueueModesResult,
        errors=(SessionNotFoundError,), summary="choose the queue modes")
async def set_queue_modes(ctx: "Context", p: t.SetQueueModesParams) -> t.SetQueueModesResult:
    session = ctx.session(p.session_id, create=True)
    session.set_queue_modes(p.steering, p.follow_up)
    agent = session.agent
    return t.SetQueueModesResult(steering=agent.steering.mode, follow_up=agent.follow_ups.mode)


@method("setAutoRetry", params=t.SetAutoRetryParams, result=t.AutoRetrySettings,
        errors=(SessionNotFoundError,), summary="switch and tune automatic retry")
async def set_auto_retry(ctx: "Context", p: t.SetAutoRetryParams) -> t.AutoRetrySettings:
    not_negative("maxAttempts", p.max_attempts)
    not_negative("baseDelayMs", p.base_delay_ms)
    session = ctx.session(p.session_id, create=True)
    settings = session.set_auto_retry(p.enabled, p.max_attempts, p.base_delay_ms)
    return t.AutoRetrySettings(enabled=settings.enabled, max_attempts=settings.max_attempts,
                               base_delay_ms=settings.base_delay_ms)


@method("compact", params=t.CompactParams, result=t.CompactResult,
        errors=(SessionNotFoundError, AgentBusy, InvalidState), summary="summarise the older context now")
async def compact(ctx: "Context", p: t.CompactParams) -> t.CompactResult:
    session = ctx.session(p.session_id)
    if session.busy:
        raise AgentBusy("a run is active: abort it or wait for agent_settled first")
    result = await session.compact(p.custom_instructions)
    if result is None:
        raise InvalidState(f"compaction did not happen: {session.compaction_said or 'see compaction_end'}")
    return t.CompactResult(summary=result.summary, first_kept_entry_id=result.first_kept_entry_id,
                           tokens_before=result.tokens_before, estimated_tokens_after=result.estimated_tokens_after)


@method("setAutoCompaction", params=t.SetAutoCompactionParams, result=t.AutoCompactionSettings,
        errors=(SessionNotFoundError,), summary="switch and tune auto-compaction")
async def set_auto_compaction(ctx: "Context", p: t.SetAutoCompactionParams) -> t.AutoCompactionSettings:
    not_negative("reserveTokens", p.reserve_tokens)
    not_negative("keepRecentTokens", p.keep_recent_tokens)
    session = ctx.session(p.session_id, create=True)
    settings = session.set_auto_compaction(p.enabled, p.reserve_tokens, p.keep_recent_tokens)
    return t.AutoCompactionSettings(enabled=settings.enabled, reserve_tokens=settings.reserve_tokens,
                                    keep_recent_tokens=settings.keep_recent_tokens)
