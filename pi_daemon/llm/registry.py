"""The model registry: which models exist, which can be used, and their API keys.

Built from the built-in catalog, ``models.json`` (see :mod:`.config`) and the faux
provider's offline models. A model needs a key when its provider is a hosted one or its
``apiKey`` names an environment variable; local servers configured without ``apiKey``
need none.
"""

from __future__ import annotations

import os

import attrs

from .catalog import PROVIDERS, builtin_models
from .config import ConfigError, merged_providers, model_from_config
from .faux import FauxProvider, echo_reply, load_script
from .model import Model
from .stream import known_apis


class ModelUnavailable(Exception):
    """Unknown model, or one that cannot be used (no API key); the text says which."""


@attrs.define
class Entry:
    model: Model
    api_key: str | None = None  # a literal, "$ENV_NAME", or None when none is needed
    needs_key: bool = False


def resolve_value(spec: str | None) -> str | None:
    if spec and spec.startswith("$"):
        return os.environ.get(spec[1:]) or None
    return spec


def _resolve_headers(model: Model) -> Model:
    if not model.headers:
        return model
    resolved = {k: v for k, v in ((k, resolve_value(v)) for k, v in model.headers.items()) if v}
    return attrs.evolve(model, headers=resolved or None)


class ModelRegistry:
    def __init__(self, entries: list[Entry] | None = None) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        for entry in entries or []:
            self.add(entry)

    @classmethod
    def load(cls, workspace: str, faux_script: str | None = None) -> "ModelRegistry":
        registry = cls()
        registry.add(Entry(FauxProvider(model_id="echo", fallback=echo_reply).model()))
        if faux_script:
            registry.add(Entry(load_script(faux_script).model()))
        providers, _ = merged_providers(workspace)
        for model in builtin_models():
            config = providers.get(model.provider, {})
            override = (config.get("modelOverrides") or {}).get(model.id)
            if config or override:
                model = model_from_config(model.provider, config, override or {}, base=model)
            env = PROVIDERS[model.provider][2]
            registry.add(Entry(_resolve_headers(model), config.get("apiKey") or f"${env}", needs_key=True))
        for name, config in providers.items():
            if name in PROVIDERS:  # a built-in provider's own api and base URL, unless changed
                api, base_url, _ = PROVIDERS[name]
                config = {"api": api, "baseUrl": base_url, **config}
            for raw in config.get("models", []):
                model = _resolve_headers(model_from_config(name, config, raw))
                if model.api not in known_apis():
                    raise ConfigError(f"models.json: provider {name!r} model {model.id!r}: unknown api "
                                      f"{model.api!r} (known: {', '.join(known_apis())})")
                if not model.base_url:
                    raise ConfigError(f"models.json: provider {name!r} model {model.id!r} has no baseUrl")
                spec = config.get("apiKey")
                if spec is None and name in PROVIDERS:
                    spec = f"${PROVIDERS[name][2]}"
                registry.add(Entry(model, spec, needs_key=name in PROVIDERS or bool(spec and spec.startswith("$"))))
        return registry

    def add(self, entry: Entry) -> None:
        self._entries[(entry.model.provider, entry.model.id)] = entry

    def models(self) -> list[Model]:
        return [e.model for e in self._entries.values()]

    def availability(self, model: Model) -> tuple[bool, str | None]:
        entry = self._entries.get((model.provider, model.id))
        if entry is None:
            return False, f"model {model.spec} is not registered"
        if entry.needs_key and not resolve_value(entry.api_key):
            if entry.api_key and entry.api_key.startswith("$"):
                where = f"set the environment variable {entry.api_key[1:]}"
            else:
                where = f"set apiKey for provider {model.provider!r} in models.json"
            return False, f"no API key for {model.provider}: {where}"
        return True, None

    def find(self, provider: str, model_id: str) -> Model:
        entry = self._entries.get((provider, model_id))
        if entry is None:
            known = ", ".join(sorted(f"{p}/{m}" for p, m in self._entries)) or "none"
            raise ModelUnavailable(f"unknown model {provider}/{model_id}; known models: {known}")
        return entry.model

    def resolve(self, spec: str) -> Model:
        """``provider/id`` -> Model (the id may itself contain slashes)."""
        provider, slash, model_id = spec.partition("/")
        if not slash or not provider or not model_id:
            raise ModelUnavailable(f"model spec {spec!r} is not of the form provider/id")
        return self.find(provider, model_id)

    def usable(self, model: Model) -> Model:
        ok, reason = self.availability(model)
        if not ok:
            raise ModelUnavailable(reason or f"model {model.spec} cannot be used")
        return model

    def api_key(self, model: Model) -> str | None:
        entry = self._entries.get((model.provider, model.id))
        return resolve_value(entry.api_key) if entry else None

    def first_usable(self) -> Model | None:
        for entry in self._entries.values():
            if entry.model.provider != "faux" and self.availability(entry.model)[0]:
                return entry.model
        return None
