"""The model registry: which models exist, which can be used, and their API keys.

Built from the built-in catalog, ``models.json`` (see :mod:`.config`) and the faux
provider's offline models. A model needs a key when its provider is a hosted one or its
``apiKey`` names an environment variable; local servers configured without ``apiKey``
need none. Keys and ``$ENV`` headers are handed out only for the destinations
:mod:`.credentials` allows; a model whose credential is withheld is unavailable, with
the reason.

The registry is where a model's name becomes something a request can be sent to, so it is
where workspace trust is decided for models: a provider only an untrusted workspace's
``models.json`` defines is listed, with the reason, but :meth:`ModelRegistry.find` refuses it,
whoever asks — a prompt, ``setModel``, ``task``'s ``model``, a loaded session, ``--model`` —
until the user trusts the workspace (the registry is then reloaded in place).
"""

from __future__ import annotations

import logging

import attrs

from ..guard import trust
from ..json_types import JsonObject
from ..settings import Ignored, default_model
from .catalog import PROVIDERS, builtin_models
from .config import Providers, config_files, merged_providers, model_from_config
from .config_values import (env_references, expand, is_command, reads_environment, resolve, resolved_now,
                            secret_failure, variable)
from .credentials import Destinations, env_names, install
from .discovery import discover, discoverable
from .faux import FauxProvider, echo_reply, load_script
from .model import Model
from .model_servers import is_server
from .stream import known_apis


log = logging.getLogger(__name__)


class ModelUnavailable(Exception):
    """Unknown model, or one that cannot be used (no API key, an untrusted workspace's); the text
    says which, ``data`` what a client can do about it (``{reason: "missingKey", provider, envVar?}``
    or ``{reason: "untrustedWorkspace", provider, workspace}``)."""

    def __init__(self, message: str, data: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.data = data

    @property
    def untrusted(self) -> bool:
        return (self.data or {}).get("reason") == "untrustedWorkspace"


@attrs.define
class Entry:
    model: Model
    api_key: str | None = None  # a spec (:mod:`.config_values`), or None when none is needed
    needs_key: bool = False
    refused: str | None = None  # why a credential of this model is withheld
    untrusted: bool = False  # an untrusted workspace's own provider: refused until it is trusted


@attrs.frozen
class Server:
    """A provider of models.json with its own base URL (a model server); ``removable`` when the
    user's own models.json defines it (``removeModelServer``)."""

    base_url: str
    removable: bool


@attrs.define
class Disabled:
    """A provider of models.json the daemon cannot serve, and why."""

    provider: str
    reason: str
    models: list[str] = attrs.field(factory=list)


def _refusal(spec: str | None, url: str, destinations: Destinations) -> str | None:
    if not reads_environment(spec):
        return None
    for name in env_references(spec):
        refused = destinations.refusal(name, url)
        if refused:
            return refused
    return None


def _resolve_headers(model: Model, destinations: Destinations) -> tuple[Model, str | None]:
    """The model with its environment headers resolved (commands stay, to run when first
    needed: :func:`.stream.stream`), and why one may not go to its base URL."""
    if not model.headers:
        return model, None
    refused = None
    resolved = {}
    for name, spec in model.headers.items():
        refusal = _refusal(spec, model.base_url, destinations)
        if refusal:
            refused = refused or refusal
            continue
        value = spec if is_command(spec) else expand(spec)
        if value:
            resolved[name] = value
    return attrs.evolve(model, headers=resolved or None), refused and f"header of {model.spec}: {refused}"


def _bases(name: str, config: JsonObject) -> list[str]:
    """Every base URL a provider config sends requests to."""
    default = config.get("baseUrl") or (PROVIDERS[name][1] if name in PROVIDERS else "")
    entries = [*config.get("models", []), *(config.get("modelOverrides") or {}).values()]
    return [default, *(e["baseUrl"] for e in entries if e.get("baseUrl"))]


def _names(name: str, config: JsonObject) -> set[str]:
    """Every environment variable a provider config reads."""
    names = env_names(config)
    for entry in [*config.get("models", []), *(config.get("modelOverrides") or {}).values()]:
        names |= env_names(entry)
    if name in PROVIDERS and "apiKey" not in config:
        names.add(PROVIDERS[name][2])
    return names


def destinations(providers: Providers, trusted: bool) -> Destinations:
    """The catalog's and the user's destinations; a trusted workspace's for unclaimed names."""
    found = Destinations()
    for _, base_url, env in PROVIDERS.values():
        found.add(env, base_url)
    for name, config in providers.home.items():
        for env in _names(name, config):
            for base_url in _bases(name, config):
                found.add(env, base_url)
    if trusted:
        extra = [(env, base_url) for name, config in providers.workspace.items()
                 for env in _names(name, config) if not found.claimed(env)
                 for base_url in _bases(name, providers.merged[name])]
        for env, base_url in extra:
            found.add(env, base_url)
    return found


def _unservable(model: Model) -> str | None:
    if model.api not in known_apis():
        return f"model {model.id!r}: unknown api {model.api!r} (known: {', '.join(known_apis())})"
    if not model.base_url:
        return f"model {model.id!r} has no baseUrl"
    return None


class ModelRegistry:
    def __init__(self, entries: list[Entry] | None = None) -> None:
        self._entries: dict[tuple[str, str], Entry] = {}
        self.disabled: list[Disabled] = []  # providers of models.json that cannot be served
        self.destinations = Destinations()
        self.ignored: list[Ignored] = []  # what an untrusted workspace's models.json may not set
        self.default_withheld: tuple[tuple[str, str], str] | None = None  # :meth:`default`'s refusal
        self.servers: dict[str, Server] = {}
        self._source: tuple[str, str | None] | None = None
        for entry in entries or []:
            self.add(entry)

    @classmethod
    def load(cls, workspace: str, faux_script: str | None = None, trusted: bool | None = None) -> "ModelRegistry":
        registry = cls()
        registry._source = (workspace, faux_script)
        registry.reload(trusted)
        return registry

    def reload(self, trusted: bool | None = None) -> None:
        """Read the configuration again (after the user trusted the workspace); in place, so
        everything holding this registry sees the change. ``trusted`` None asks :mod:`pi_daemon.guard.trust`."""
        assert self._source is not None, "only a loaded registry can be reloaded"
        workspace, faux_script = self._source
        if trusted is None:
            trusted = trust.is_trusted(workspace)
        entries = [Entry(FauxProvider(model_id="echo", fallback=echo_reply).model())]
        if faux_script:
            entries.append(Entry(load_script(faux_script).model()))
        providers = merged_providers(workspace, trusted=trusted, builtin=set(PROVIDERS))
        found = destinations(providers, trusted)
        for model in builtin_models():
            config = providers.merged.get(model.provider, {})
            override = (config.get("modelOverrides") or {}).get(model.id)
            if config or override:
                model = model_from_config(model.provider, config, override or {}, base=model)
            env = PROVIDERS[model.provider][2]
            model, refused = _resolve_headers(model, found)
            entries.append(Entry(model, config.get("apiKey") or f"${env}", needs_key=True, refused=refused))
        disabled = [Disabled(name, reason) for name, reason in providers.invalid.items()]
        for name, config in providers.merged.items():
            if name in providers.invalid:
                continue
            if name in PROVIDERS:  # a built-in provider's own api and base URL, unless changed
                api, base_url, _ = PROVIDERS[name]
                config = {"api": api, "baseUrl": base_url, **config}
            raws, problem = config.get("models", []), None
            if not raws and name in providers.untrusted_only and discoverable(config):
                problem = "lists no models; the daemon asks the server for them once the workspace is trusted"
            elif not raws and name not in PROVIDERS and discoverable(config):
                spec = config.get("apiKey")
                refused = _refusal(spec, config["baseUrl"], found)
                raws, problem = discover(config, None if refused or is_command(spec) else expand(spec))
            added = []
            for raw in raws:
                model, refused = _resolve_headers(model_from_config(name, config, raw), found)
                problem = problem or _unservable(model)
                spec = config.get("apiKey")
                if spec is None and name in PROVIDERS:
                    spec = f"${PROVIDERS[name][2]}"
                needs_key = name in PROVIDERS or is_command(spec) or reads_environment(spec)
                added.append(Entry(model, spec, needs_key=needs_key, refused=refused,
                                   untrusted=name in providers.untrusted_only))
            if problem:
                disabled.append(Disabled(name, f"models.json: provider {name!r}: {problem}", [e.model.id for e in added]))
                log.warning("models.json: provider %r is disabled: %s", name, problem)
                continue
            entries += added
        for item in disabled:
            if item.provider in providers.invalid:
                log.warning("%s; the provider is disabled", item.reason)
        self.disabled = disabled
        self._entries = {}
        for entry in entries:
            self.add(entry)
        self.destinations = found
        self.ignored = providers.ignored
        self.servers = {name: Server(config["baseUrl"], is_server(providers.home.get(name)))
                        for name, config in providers.merged.items() if name not in PROVIDERS and is_server(config)}
        install(found)

    def add(self, entry: Entry) -> None:
        self._entries[(entry.model.provider, entry.model.id)] = entry

    def models(self) -> list[Model]:
        return [e.model for e in self._entries.values()]

    def _untrusted(self, entry: Entry) -> ModelUnavailable | None:
        """Why ``entry`` may not be used yet: only an untrusted workspace defines its provider."""
        if not entry.untrusted:
            return None
        workspace = self._source[0] if self._source else "the workspace"
        where = config_files(workspace)[2] if self._source else "its .pi/models.json"
        spec = entry.model.spec
        return ModelUnavailable(
            f"model {spec} is defined only by {where}, and the workspace is not trusted: trust the "
            f"workspace (the client's trust question, or pi-daemon --trust-workspace) to use it",
            {"reason": "untrustedWorkspace", "provider": entry.model.provider, "workspace": str(workspace)})

    def availability(self, model: Model) -> tuple[bool, str | None]:
        entry = self._entries.get((model.provider, model.id))
        if entry is None:
            return False, f"model {model.spec} is not registered"
        untrusted = self._untrusted(entry)
        if untrusted is not None:
            return False, str(untrusted)
        if entry.refused:
            return False, entry.refused
        refused = self._key_refusal(entry, model)
        if refused:
            return False, refused
        spec = entry.api_key
        if is_command(spec):  # runs when first needed; a failure is remembered
            failed = secret_failure(spec)
            return (False, f"no API key for {model.provider}: {failed}") if failed else (True, None)
        if entry.needs_key and not expand(spec):
            names = env_references(spec)
            if names:
                where = f"set the environment variable {', '.join(n for n in names if not variable(n))}"
            else:
                where = f"set apiKey for provider {model.provider!r} in models.json"
            return False, f"no API key for {model.provider}: {where}"
        return True, None

    def find(self, provider: str, model_id: str) -> Model:
        """The model of that name; every use of a model by name comes here (the trust check)."""
        entry = self._entries.get((provider, model_id))
        if entry is None:
            known = ", ".join(sorted(f"{p}/{m}" for (p, m), e in self._entries.items() if not e.untrusted)) or "none"
            raise ModelUnavailable(f"unknown model {provider}/{model_id}; known models: {known}")
        untrusted = self._untrusted(entry)
        if untrusted is not None:
            raise untrusted
        return entry.model

    def resolve(self, spec: str) -> Model:
        """``provider/id`` -> Model (the id may itself contain slashes)."""
        provider, slash, model_id = spec.partition("/")
        if not slash or not provider or not model_id:
            raise ModelUnavailable(f"model spec {spec!r} is not of the form provider/id")
        return self.find(provider, model_id)

    def usable(self, model: Model) -> Model:
        entry = self._entries.get((model.provider, model.id))
        untrusted = self._untrusted(entry) if entry is not None else None
        if untrusted is not None:
            raise untrusted
        ok, reason = self.availability(model)
        if not ok:
            raise ModelUnavailable(reason or f"model {model.spec} cannot be used", self._missing_key(model))
        return model

    def _missing_key(self, model: Model) -> dict[str, str] | None:
        """What a client can supply (``setApiKey``) for ``model``, when what it lacks is a hosted provider's key."""
        entry = self._entries.get((model.provider, model.id))
        if model.provider not in PROVIDERS or entry is None or entry.refused or not entry.needs_key or is_command(entry.api_key) or expand(entry.api_key):
            return None
        unset = [name for name in env_references(entry.api_key) if not variable(name)]
        return {"reason": "missingKey", "provider": model.provider, **({"envVar": unset[0]} if unset else {})}

    def _key_refusal(self, entry: Entry, model: Model) -> str | None:
        reason = _refusal(entry.api_key, model.base_url, self.destinations)
        return reason and f"key of {model.spec}: {reason}"

    def api_key(self, model: Model) -> str | None:
        """The key for a request to ``model.base_url``; None when none may be sent there
        (or it comes from a command that has not run yet: :meth:`request_key`)."""
        entry = self._entries.get((model.provider, model.id))
        if entry is None or entry.untrusted or self._key_refusal(entry, model):
            return None
        return resolved_now(entry.api_key)

    async def request_key(self, model: Model) -> str | None:
        """The key for a request, running its ``!command`` the first time."""
        entry = self._entries.get((model.provider, model.id))
        if entry is None or entry.untrusted or self._key_refusal(entry, model):
            return None
        value, _ = await resolve(entry.api_key)
        return value

    def first_usable(self) -> Model | None:
        for entry in self._entries.values():
            if entry.model.provider != "faux" and self.availability(entry.model)[0]:
                return entry.model
        return None

    def default(self, spec: str | None) -> Model | None:
        """The default model for new sessions: ``spec`` (``--model``), else the user's remembered
        one (settings.json's ``defaultProvider``/``defaultModel``) when it is usable, else the first
        usable one. A ``spec`` only an untrusted workspace defines gives none (logged with the
        reason), so the daemon still starts and can be told to trust the workspace; other errors raise."""
        if not spec:
            return self._remembered() or self.first_usable()
        try:
            return self.resolve(spec)
        except ModelUnavailable as exc:
            if not exc.untrusted:
                raise
            log.warning("--model: %s; new sessions start with no model", exc)
            provider, _, model_id = spec.partition("/")
            self.default_withheld = ((provider, model_id), str(exc))
            return None

    def _remembered(self) -> Model | None:
        chosen = default_model()
        if chosen is None:
            return None
        try:
            return self.usable(self.find(*chosen))
        except ModelUnavailable as exc:
            log.warning("settings.json: the default model %s/%s is not used: %s", *chosen, exc)
            return None
