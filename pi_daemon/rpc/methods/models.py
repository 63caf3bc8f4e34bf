"""Models: which there are, the session's model and thinking level, the ways to a first model
(a hosted provider's key, a local server), and managing them afterwards (``modelAccess``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from .. import types as t
from ...llm import access
from ...llm.catalog import PROVIDERS
from ...llm.config_values import hold
from ...llm.model_servers import ServerRefused, add_server, probe, remove_server
from ...wire.errors import AgentBusy, InvalidParams, ModelUnavailableError, SessionNotFoundError
from ..registry import method
from ..state import model_info

if TYPE_CHECKING:
    from ..context import Context

MAX_KEY_CHARS = 4096
MAX_PROBED = 16  # URLs a client may ask about besides the usual ones


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


@method("setApiKey", params=t.SetApiKeyParams, result=t.ModelsResult, errors=(InvalidParams,),
        summary="hold a hosted provider's API key for the daemon's life")
async def set_api_key(ctx: "Context", p: t.SetApiKeyParams) -> t.ModelsResult:
    _hosted(p.provider)
    if not p.key or len(p.key) > MAX_KEY_CHARS or any(c.isspace() or not c.isprintable() for c in p.key):
        raise InvalidParams(f"invalid params: params.key: a key is 1 to {MAX_KEY_CHARS} printable characters "
                            "without spaces")
    hold(PROVIDERS[p.provider][2], p.key)
    access.key_changed(p.provider)
    return t.ModelsResult(models=_models_of(ctx, p.provider))


@method("modelAccess", params=t.Empty, result=t.ModelAccessResult,
        summary="each provider: where its key comes from, or which server it is")
async def model_access(ctx: "Context", p: t.Empty) -> t.ModelAccessResult:
    return _access(ctx)


@method("removeApiKey", params=t.RemoveApiKeyParams, result=t.ModelAccessResult, errors=(InvalidParams,),
        summary="forget the key setApiKey gave a hosted provider")
async def remove_api_key(ctx: "Context", p: t.RemoveApiKeyParams) -> t.ModelAccessResult:
    _hosted(p.provider)
    access.forget_key(p.provider)
    return _access(ctx)


@method("removeModelServer", params=t.RemoveModelServerParams, result=t.ModelAccessResult, errors=(InvalidParams,),
        summary="remove a model server from the user's models.json")
async def remove_model_server(ctx: "Context", p: t.RemoveModelServerParams) -> t.ModelAccessResult:
    try:
        remove_server(p.name)
    except ServerRefused as exc:
        raise InvalidParams(f"invalid params: params.name: {exc}") from None
    ctx.registry.reload()
    ctx.sessions.refresh_models()
    return _access(ctx)


def _hosted(provider: str) -> None:
    if provider not in PROVIDERS:
        raise InvalidParams(f"invalid params: params.provider: {provider[:100]!r} takes no key here; "
                            f"the hosted providers are {', '.join(sorted(PROVIDERS))}")


def _access(ctx: "Context") -> t.ModelAccessResult:
    return t.ModelAccessResult(providers=[t.ProviderAccess(**attrs.asdict(a)) for a in access.providers(ctx.registry)])


@method("probeLocalServers", params=t.ProbeLocalServersParams, result=t.ProbeLocalServersResult,
        errors=(InvalidParams,), summary="the model servers answering on this machine's usual ports")
async def probe_local_servers(ctx: "Context", p: t.ProbeLocalServersParams) -> t.ProbeLocalServersResult:
    try:
        found, late = await probe(list(p.urls or [])[:MAX_PROBED])
    except ServerRefused as exc:
        raise InvalidParams(f"invalid params: params.urls: {exc}") from None
    return t.ProbeLocalServersResult(servers=[t.LocalServer(name=s.name, base_url=s.base_url, models=s.models)
                                              for s in found], timed_out=late or None)


@method("addModelServer", params=t.AddModelServerParams, result=t.ModelsResult,
        errors=(InvalidParams, ModelUnavailableError),
        summary="add an OpenAI-compatible server to the user's models.json")
async def add_model_server(ctx: "Context", p: t.AddModelServerParams) -> t.ModelsResult:
    try:
        add_server(p.name, p.base_url)
    except ServerRefused as exc:
        raise InvalidParams(f"invalid params: {exc}") from None
    ctx.registry.reload()
    models = _models_of(ctx, p.name)
    if not models:
        reasons = [d.reason for d in ctx.registry.disabled if d.provider == p.name]
        raise ModelUnavailableError(reasons[0] if reasons else f"{p.base_url} lists no models")
    return t.ModelsResult(models=models)


def _models_of(ctx: "Context", provider: str) -> list[t.ModelInfo]:
    return [model_info(ctx, m) for m in ctx.registry.models() if m.provider == provider]


@method("setModel", params=t.SetModelParams, result=t.SetModelResult,
        errors=(SessionNotFoundError, AgentBusy, ModelUnavailableError), summary="choose the session's model")
async def set_model(ctx: "Context", p: t.SetModelParams) -> t.SetModelResult:
    from ...host.commands import set_model as change

    session = ctx.session(p.session_id, create=True)
    model = await change(ctx.host, session, p.provider, p.model_id, remember=p.remember)
    return t.SetModelResult(model=model_info(ctx, model))


@method("setThinkingLevel", params=t.SetThinkingLevelParams, result=t.SetThinkingLevelResult,
        errors=(SessionNotFoundError,), summary="choose the thinking level")
async def set_thinking_level(ctx: "Context", p: t.SetThinkingLevelParams) -> t.SetThinkingLevelResult:
    session = ctx.session(p.session_id, create=True)
    return t.SetThinkingLevelResult(level=await session.set_thinking_level(p.level))
