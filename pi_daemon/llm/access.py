"""Model access: each provider as the user reaches it, for a client's "manage model access" view.

A hosted provider (the catalog's) takes a key: from its environment variable, or one the client
handed over (``setApiKey``, forgotten again by :func:`forget_key`; the environment wins). A model
server is a provider of models.json with its own base URL; the user's own models.json's can be
removed (:func:`.model_servers.remove_server`). The faux provider is built in and needs nothing.

The last authentication failure (HTTP 401/403) each provider answered is kept for the daemon's
life (:mod:`.errors`), so the view can say why a key is wrong; it is forgotten when that
provider's key changes.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .catalog import PROVIDERS
from .config_values import release, source
from .errors import auth_failures
from .registry import ModelRegistry


@attrs.frozen
class Access:
    provider: str
    kind: Literal["hosted", "server", "builtin"]
    models: int
    removable: bool = False
    key: Literal["environment", "client", "none"] | None = None
    key_variable: str | None = None
    base_url: str | None = None
    reason: str | None = None
    last_error: str | None = None


def forget_key(provider: str) -> None:
    """Forget the key the client gave ``provider`` (a hosted one) and its last refusal."""
    release(PROVIDERS[provider][2])
    key_changed(provider)


def key_changed(provider: str) -> None:
    auth_failures.pop(provider, None)


def providers(registry: ModelRegistry) -> list[Access]:
    """Every provider: the hosted ones, the model servers, then the built-in faux one."""
    usable: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for model in registry.models():
        ok, reason = registry.availability(model)
        usable[model.provider] = usable.get(model.provider, 0) + ok
        if not ok and reason:
            reasons.setdefault(model.provider, reason)
    for disabled in registry.disabled:
        reasons.setdefault(disabled.provider, disabled.reason)

    def why(name: str) -> str | None:
        return None if usable.get(name) else reasons.get(name, "it lists no models")

    found = [Access(name, "hosted", usable.get(name, 0), key=source(env), key_variable=env, reason=why(name),
                    last_error=auth_failures.get(name))
             for name, (_, _, env) in sorted(PROVIDERS.items())]
    found += [Access(name, "server", usable.get(name, 0), removable=server.removable, base_url=server.base_url,
                     reason=why(name), last_error=auth_failures.get(name))
              for name, server in sorted(registry.servers.items())]
    found.append(Access("faux", "builtin", usable.get("faux", 0)))
    return found
