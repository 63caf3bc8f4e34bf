"""What the daemon reports about models and sessions (``ModelInfo``, ``SessionState``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ..llm.model import Model
from . import types as t

if TYPE_CHECKING:
    from ..session import AgentSession
    from .server import Daemon


def model_info(daemon: "Daemon", model: Model) -> t.ModelInfo:
    available, reason = daemon.registry.availability(model)
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


def session_state(daemon: "Daemon", session: "AgentSession") -> t.SessionState:
    from ..tools import sandbox  # here: the initialize fast path imports this module, sandbox is slow to import

    agent = session.agent
    return t.SessionState(
        session_id=session.id,
        model=model_info(daemon, session.model) if session.model else None,
        thinking_level=agent.state.thinking_level,
        is_streaming=session.busy,
        steering_mode=agent.steering.mode,
        follow_up_mode=agent.follow_ups.mode,
        message_count=len(agent.state.messages),
        pending_message_count=len(agent.steering) + len(agent.follow_ups),
        queue=t.QueueState(steering=agent.steering.texts(), follow_up=agent.follow_ups.texts()),
        cwd=session.cwd,
        session_file=session.file if session.store.has_file else None,
        session_name=session.name,
        last_error=agent.state.error,
        read_only=session.store.read_only,
        workspace_trust=daemon.trust.state(),
        sandbox=t.SandboxState(**attrs.asdict(sandbox.status(daemon.workspace))),
    )
