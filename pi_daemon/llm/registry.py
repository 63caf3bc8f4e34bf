"""The model registry: which models exist, which can be used, and their API keys."""

from __future__ import annotations

import os

import attrs

from .faux import FauxProvider, echo_reply, load_script
from .model import Model


class ModelUnavailable(Exception):
    """Unknown model, or one that cannot be used (no API key); the text says which."""


@attrs.define
class Entry:
    model: Model
    api_key: str | None = None  # a literal, "$ENV_NAME", or None when none is needed
    needs_key: bool = False


def _resolve_key(spec: str | None) -> str | None:
    if spec and spec.startswith("$"):
        return os.environ.get(spec[1:]) or None
    return spec


class ModelRegistry:
    def __init__(self, entries: list[Entry] | None = None) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        for entry in entries or []:
            self.add(entry)

    @classmethod
    def default(cls, faux_script: str | None = None) -> "ModelRegistry":
        registry = cls()
        registry.add(Entry(FauxProvider(model_id="echo", fallback=echo_reply).model()))
        if faux_script:
            registry.add(Entry(load_script(faux_script).model()))
        return registry

    def add(self, entry: Entry) -> None:
        self._entries[(entry.model.provider, entry.model.id)] = entry

    def models(self) -> list[Model]:
        return [e.model for e in self._entries.values()]

    def availability(self, model: Model) -> tuple[bool, str | None]:
        entry = self._entries.get((model.provider, model.id))
        if entry is None:
            return False, f"model {model.spec} is not registered"
        if entry.needs_key and not _resolve_key(entry.api_key):
            hint = entry.api_key[1:] if entry.api_key and entry.api_key.startswith("$") else None
            where = f"set {hint}" if hint else f"set apiKey for provider {model.provider!r}"
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
        return _resolve_key(entry.api_key) if entry else None

    def first_usable(self) -> Model | None:
        for entry in self._entries.values():
            if entry.model.provider != "faux" and self.availability(entry.model)[0]:
                return entry.model
        return None
