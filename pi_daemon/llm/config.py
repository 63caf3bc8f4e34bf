"""``models.json``: providers and models from the workspace and the user's configuration.

Files are read from Pi's own ``~/.pi/agent/models.json`` (``$PI_CODING_AGENT_DIR``), then
``$PI_DAEMON_HOME/models.json`` (default ``~/.config/pi-daemon``), then
``<workspace>/.pi/models.json``; a later file wins field by field. The shape is Pi's:

``{"providers": {NAME: {baseUrl, api, apiKey, authHeader, headers, compat, models: [...], modelOverrides}}}``

``apiKey`` and header values resolve as :mod:`.config_values` says (literal, ``$ENV``,
``!command``). A file that is not a JSON object of providers stops the daemon with a
message naming the file; a provider entry that does not fit the shape disables that
provider alone, with the reason (:attr:`Providers.invalid`).

Until the user trusts the workspace (:mod:`pi_daemon.guard.trust`), a provider only its file
defines is listed but cannot be used (:class:`.registry.ModelRegistry` refuses to resolve it),
and its file reads no environment variable, runs no command, and may not change where a
provider that the catalog or the user's file defines sends its requests (``baseUrl``,
``api``, ``apiKey``, ``headers``); what it tried is reported as ignored. Where an
environment value may go, trusted or not, is :mod:`.credentials`' business.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from ..config_file import read_json
from ..home import home_dir, pi_agent_dir
from ..settings import Ignored
from .config_shape import PROVIDER_SCHEMA, SCHEMA, shape_errors
from .config_values import env_references, is_command
from .model import Model, ModelCost

class ConfigError(ValueError):
    pass


def config_files(workspace: str) -> list[Path]:
    """The user's files (Pi's, then the daemon's own) and the workspace's, in merge order."""
    return [pi_agent_dir() / "models.json", home_dir() / "models.json", Path(workspace) / ".pi" / "models.json"]


def load_file(path: Path, invalid: dict[str, str] | None = None) -> dict[str, Any]:
    """The file's content; a provider entry that does not fit the shape is left out and
    its reason put in ``invalid`` (a file that is no JSON object of providers raises)."""
    try:
        data = read_json(path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: is not valid JSON: {exc}") from None
    errors = shape_errors(SCHEMA, data)
    if errors:
        raise ConfigError(f"{path}: does not fit the models.json shape:\n  " + "\n  ".join(errors))
    providers = {}
    for name, config in (data.get("providers") or {}).items():
        errors = shape_errors(PROVIDER_SCHEMA, config)
        if errors:
            if invalid is not None:
                invalid[name] = f"{path}: providers.{name} does not fit the models.json shape: " + "; ".join(errors)
            continue
        providers[name] = config
    return {**data, "providers": providers}


@attrs.define
class Providers:
    """The merged provider configs and where they came from."""

    merged: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    home: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # the user's own file alone
    workspace: dict[str, dict[str, Any]] = attrs.field(factory=dict)  # what the workspace contributed
    used: list[Path] = attrs.field(factory=list)
    ignored: list[Ignored] = attrs.field(factory=list)
    untrusted_only: set[str] = attrs.field(factory=set)  # providers only an untrusted workspace defines
    invalid: dict[str, str] = attrs.field(factory=dict)  # provider -> why its entry cannot be served


def _merge(into: dict[str, dict[str, Any]], providers: dict[str, dict[str, Any]]) -> None:
    for name, config in providers.items():
        merged = into.setdefault(name, {})
        for key, value in config.items():
            if key == "models":
                by_id = {m["id"]: m for m in merged.get("models", [])}
                by_id.update({m["id"]: m for m in value})
                merged["models"] = list(by_id.values())
            elif isinstance(value, dict) and isinstance(merged.get(key), dict):
                merged[key] = {**merged[key], **value}
            else:
                merged[key] = value


def _unsafe(value: str) -> str | None:
    """What resolving ``value`` would do that an untrusted workspace may not, or None."""
    if is_command(value):
        return "would run a command"
    names = env_references(value)
    if names:
        return f"would send the environment variable {', '.join(names)}"
    return None


def _no_env(fields: dict[str, Any], where: str, file: str, ignored: list[Ignored]) -> dict[str, Any]:
    """``fields`` without values that read the environment or run a command (an untrusted
    workspace may do neither)."""
    kept = dict(fields)
    effect = _unsafe(kept["apiKey"]) if isinstance(kept.get("apiKey"), str) else None
    if effect:
        kept.pop("apiKey")
        ignored.append(Ignored(file, f"{where}.apiKey", effect))
    headers = kept.get("headers")
    if isinstance(headers, dict):
        for header, value in list(headers.items()):
            effect = _unsafe(value)
            if effect:
                ignored.append(Ignored(file, f"{where}.headers.{header}", effect))
        kept["headers"] = {k: v for k, v in headers.items() if not _unsafe(v)}
    return kept


ROUTING = ("baseUrl", "api", "apiKey", "headers")
UNTRUSTED_PROVIDER = "would send the conversation to a server only this workspace names"


def _untrusted(providers: dict[str, dict[str, Any]], known: set[str], file: str,
               ignored: list[Ignored]) -> dict[str, dict[str, Any]]:
    """What an untrusted workspace may configure: its own providers, without the environment;
    of a provider the catalog or the user's file defines, nothing that says where requests go."""
    kept: dict[str, dict[str, Any]] = {}
    for name, config in providers.items():
        where = f"providers.{name}"
        if name == "faux":
            ignored.append(Ignored(file, where, "would replace the offline faux models"))
            continue
        if name not in known:
            ignored.append(Ignored(file, where, UNTRUSTED_PROVIDER))
            config = _no_env(config, where, file, ignored)
            if "models" in config:
                config["models"] = [_no_env(m, f"{where}.models.{m['id']}", file, ignored) for m in config["models"]]
            kept[name] = config
            continue
        effect = f"would send the {name} key and the conversation elsewhere"

        def strip(fields: dict[str, Any], at: str) -> dict[str, Any]:
            for key in ROUTING:
                if key in fields:
                    ignored.append(Ignored(file, f"{at}.{key}", effect))
            return {k: v for k, v in fields.items() if k not in ROUTING}

        stripped = strip(config, where)
        if "models" in config:
            stripped["models"] = [strip(m, f"{where}.models.{m['id']}") for m in config["models"]]
        if "modelOverrides" in config:
            stripped["modelOverrides"] = {
                mid: strip(o, f"{where}.modelOverrides.{mid}") for mid, o in config["modelOverrides"].items()}
        kept[name] = stripped
    return kept


def merged_providers(workspace: str, *, trusted: bool, builtin: set[str]) -> Providers:
    """Provider configs of every file that exists, the workspace's winning field by field
    (only what an untrusted workspace may change, see :func:`_untrusted`)."""
    pi_path, home_path, workspace_path = config_files(workspace)
    result = Providers()
    for path in (pi_path, home_path):
        if path.is_file():
            result.used.append(path)
            _merge(result.home, load_file(path, result.invalid).get("providers", {}))
    _merge(result.merged, result.home)
    if workspace_path.is_file():
        result.used.append(workspace_path)
        providers = load_file(workspace_path, result.invalid).get("providers", {})
        if not trusted:
            known = builtin | set(result.home)
            providers = _untrusted(providers, known, str(workspace_path), result.ignored)
            result.untrusted_only = set(providers) - known
        _merge(result.workspace, providers)
        _merge(result.merged, providers)
    return result


def model_from_config(provider: str, config: dict[str, Any], entry: dict[str, Any], base: Model | None = None) -> Model:
    """A Model from a ``models`` entry (or an override of ``base``) under ``config``."""
    cost = entry.get("cost")
    fields: dict[str, Any] = {
        "id": entry.get("id", base.id if base else ""),
        "provider": provider,
        "api": entry.get("api") or config.get("api") or (base.api if base else ""),
        "name": entry.get("name", base.name if base else None),
        "base_url": entry.get("baseUrl") or config.get("baseUrl") or (base.base_url if base else ""),
        "reasoning": entry.get("reasoning", base.reasoning if base else False),
        "input": list(entry.get("input", base.input if base else ["text"])),
        "cost": ModelCost(
            input=(cost or {}).get("input", base.cost.input if base else 0.0),
            output=(cost or {}).get("output", base.cost.output if base else 0.0),
            cache_read=(cost or {}).get("cacheRead", base.cost.cache_read if base else 0.0),
            cache_write=(cost or {}).get("cacheWrite", base.cost.cache_write if base else 0.0),
        ),
        "context_window": entry.get("contextWindow", base.context_window if base else 128_000),
        "max_tokens": entry.get("maxTokens", base.max_tokens if base else 16_384),
        "headers": {**(config.get("headers") or {}), **(entry.get("headers") or {})} or None,
        "compat": {**(config.get("compat") or {}), **(entry.get("compat") or {})} or None,
        "auth_header": entry.get("authHeader", config.get("authHeader", base.auth_header if base else False)),
    }
    if "connectTimeoutMs" in config:
        fields["connect_timeout"] = config["connectTimeoutMs"] / 1000
    if "readTimeoutMs" in config:
        fields["read_timeout"] = config["readTimeoutMs"] / 1000
    if "maxAnswerBytes" in config:
        fields["max_answer_bytes"] = config["maxAnswerBytes"]
    return Model(**fields)
