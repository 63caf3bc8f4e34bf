"""Protocol types of the model methods: the models there are, the session's model, and the ways to
reach one (a hosted provider's key, a model server) and to take them away again (``modelAccess``).

Part of :mod:`.types`, which re-exports every name here; kept apart only to keep that module
readable. Like it, this module needs nothing but attrs.
"""

from __future__ import annotations

from typing import Literal

import attrs

ProviderKind = Literal["hosted", "server", "builtin"]
KeySource = Literal["environment", "client", "none"]


@attrs.define
class ModelRates:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@attrs.define
class ModelInfo:
    provider: str
    id: str
    name: str
    api: str
    context_window: int
    max_tokens: int
    reasoning: bool
    input: list[str]
    cost: ModelRates
    available: bool = True
    unavailable_reason: str | None = None


@attrs.define
class UnavailableModels:
    provider: str
    reason: str
    models: list[str]


@attrs.define
class ListModelsResult:
    models: list[ModelInfo]
    unavailable: list[UnavailableModels]


@attrs.define
class SetApiKeyParams:
    provider: str
    key: str


@attrs.define
class ModelsResult:
    models: list[ModelInfo]


@attrs.define
class ProbeLocalServersParams:
    urls: list[str] | None = None


@attrs.define
class LocalServer:
    name: str
    base_url: str
    models: list[str]


@attrs.define
class ProbeLocalServersResult:
    servers: list[LocalServer]
    timed_out: list[str] | None = None


@attrs.define
class AddModelServerParams:
    name: str
    base_url: str


@attrs.define
class SetModelParams:
    provider: str
    model_id: str
    session_id: str | None = None
    remember: bool = True  # the model becomes the user's default (settings.json); false: this session only


@attrs.define
class SetModelResult:
    model: ModelInfo


@attrs.define
class ProviderAccess:
    """One provider as ``modelAccess`` shows it: where its key comes from, or which server it is."""

    provider: str
    kind: ProviderKind
    models: int  # usable now
    removable: bool  # a server of the user's models.json (removeModelServer)
    key: KeySource | None = None  # hosted providers only
    key_variable: str | None = None
    base_url: str | None = None  # servers only
    reason: str | None = None  # why no model of it is usable
    last_error: str | None = None  # the last authentication failure it answered, this daemon's life


@attrs.define
class ModelAccessResult:
    providers: list[ProviderAccess]


@attrs.define
class RemoveApiKeyParams:
    provider: str


@attrs.define
class RemoveModelServerParams:
    name: str
