"""Models: which there are, and the session's model and thinking level."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as t
from ..errors import AgentBusy, ModelUnavailableError, SessionNotFoundError
from ..registry import method
from ..state import model_info

if TYPE_CHECKING:
    from ..server import Daemon


@method("listModels", params=t.Empty, result=t.ListModelsResult,
        summary="usable models, and why the others are not")
async def list_models(daemon: Daemon, p: t.Empty) -> t.ListModelsResult:
    usable: list[t.ModelInfo] = []
    unavailable: dict[str, t.UnavailableModels] = {}
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


@method("setModel", params=t.SetModelParams, result=t.SetModelResult,
        errors=(SessionNotFoundError, AgentBusy, ModelUnavailableError), summary="choose the session's model")
async def set_model(daemon: Daemon, p: t.SetModelParams) -> t.SetModelResult:
    session = daemon.sessions.get(p.session_id, create=True)
    if session.busy:
        raise AgentBusy("cannot change the model while a run is active")
    model = await session.set_model(p.provider, p.model_id)
    return t.SetModelResult(model=model_info(daemon, model))


@method("setThinkingLevel", params=t.SetThinkingLevelParams, result=t.SetThinkingLevelResult,
        errors=(SessionNotFoundError,), summary="choose the thinking level")
async def set_thinking_level(daemon: Daemon, p: t.SetThinkingLevelParams) -> t.SetThinkingLevelResult:
    session = daemon.sessions.get(p.session_id, create=True)
    return t.SetThinkingLevelResult(level=await session.set_thinking_level(p.level))
