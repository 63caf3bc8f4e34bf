"""Models: which there are, and the session's model and thinking level."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as t
from ...wire.errors import AgentBusy, ModelUnavailableError, SessionNotFoundError
from ..registry import method
from ..state import model_info

if TYPE_CHECKING:
    from ..context import Context


@method("listModels", params=t.Empty, result=t.ListModelsResult,
        summary="usable models, and why the others are not")
async def list_models(ctx: "Context", p: t.Empty) -> t.ListModelsResult:
    usable: list[t.ModelInfo] = []
    unavailable: dict[str, t.UnavailableModels] = {}
    for model in ctx.registry.models():
        info = model_info(ctx, model)
        if info.available:
            usable.append(info)
        else:
            group = unavailable.setdefault(model.provider, t.UnavailableModels(
                provider=model.provider, reason=info.unavailable_reason or "", models=[]))
            group.models.append(model.id)
    for disabled in ctx.registry.disabled:  # a models.json entry the daemon cannot serve
        unavailable.setdefault(disabled.provider, t.UnavailableModels(
            provider=disabled.provider, reason=disabled.reason, models=list(disabled.models)))
    return t.ListModelsResult(models=usable, unavailable=list(unavailable.values()))


@method("setModel", params=t.SetModelParams, result=t.SetModelResult,
        errors=(SessionNotFoundError, AgentBusy, ModelUnavailableError), summary="choose the session's model")
async def set_model(ctx: "Context", p: t.SetModelParams) -> t.SetModelResult:
    from ...host.commands import set_model as change

    session = ctx.sessions.get(p.session_id, create=True)
    model = await change(session, p.provider, p.model_id)
    return t.SetModelResult(model=model_info(ctx, model))


@method("setThinkingLevel", params=t.SetThinkingLevelParams, result=t.SetThinkingLevelResult,
        errors=(SessionNotFoundError,), summary="choose the thinking level")
async def set_thinking_level(ctx: "Context", p: t.SetThinkingLevelParams) -> t.SetThinkingLevelResult:
    session = ctx.sessions.get(p.session_id, create=True)
    return t.SetThinkingLevelResult(level=await session.set_thinking_level(p.level))
