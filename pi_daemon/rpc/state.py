"""What the daemon reports about models, MCP servers and sessions (``ModelInfo``, ``McpServerInfo``, ``SessionState``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, cast

import attrs

from ..llm.model import Model
from ..converter import from_wire
from . import types as t

if TYPE_CHECKING:
    from ..session import AgentSession
    from .context import Context


def model_info(ctx: "Context", model: Model) -> t.ModelInfo:
    available, reason = ctx.registry.availability(model)
    return t.ModelInfo(
        provider=model.provider,
        id=model.id,
        name=model.name or model.id,
        api=model.api,
        context_window=model.context_window,
        max_tokens=model.max_tokens,
        reasoning=model.reasoning,
        input=list(model.input),
        cost=t.ModelRates(input=model.cost.input, output=model.cost.output,
                          cache_read=model.cost.cache_read, cache_write=model.cost.cache_write),
        available=available,
        unavailable_reason=reason,
    )


def server_infos(ctx: "Context", session_id: str | None) -> list[t.McpServerInfo]:
    return [t.McpServerInfo(name=s.name, source=s.source, transport=s.transport,
                            state=cast(Literal["stopped", "starting", "ready", "failed"], s.state),
                            tool_count=len(s.tools), tools=s.tools, error=s.error)
            for s in ctx.mcp.states(session_id)]


def session_state(ctx: "Context", session: "AgentSession") -> t.SessionState:
    from ..session.rewind import pending_state
    from ..guard import sandbox  # slow to import, and only this needs it

    agent = session.agent
    return t.SessionState(
        session_id=session.id,
        model=model_info(ctx, session.model) if session.model else None,
        thinking_level=agent.state.thinking_level,
        is_streaming=session.busy and session.navigation is None,  # a navigation never ends in agent_settled
        steering_mode=agent.steering.mode,
        follow_up_mode=agent.follow_ups.mode,
        message_count=agent.state.message_count,
        pending_message_count=len(agent.steering) + len(agent.follow_ups),
        queue=t.QueueState(steering=agent.steering.texts(), follow_up=agent.follow_ups.texts(),
                           items=[t.QueueItem(queue_id=q.id, kind=q.kind, text=q.text)
                                  for q in (*agent.steering, *agent.follow_ups)]),
        is_compacting=session.compacting,
        settings=session_settings(session),
        cwd=session.cwd,
        session_file=session.file if session.store.has_file else None,
        session_name=session.name,
        last_error=agent.state.error,
        read_only=session.store.read_only,
        workspace_trust=ctx.trust.state(),
        sandbox=t.SandboxState(**attrs.asdict(sandbox.status(ctx.workspace))),
        mcp_servers=server_infos(ctx, session.id),
        mode=session.mode,
        pending_rewind=from_wire(pending, t.PendingRewind) if (pending := pending_state(session)) else None,
        plan=list(session.plan.current.entries),
        plan_explanation=session.plan.current.explanation,
    )


def session_settings(session: "AgentSession") -> t.SessionSettingsState:
    retry, compaction = session.retry, session.compaction
    return t.SessionSettingsState(
        auto_retry=t.AutoRetrySettings(enabled=retry.enabled, max_attempts=retry.max_attempts,
                                       base_delay_ms=retry.base_delay_ms),
        auto_compaction=t.AutoCompactionSettings(enabled=compaction.enabled, reserve_tokens=compaction.reserve_tokens,
                                                 keep_recent_tokens=compaction.keep_recent_tokens))
