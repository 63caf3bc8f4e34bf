"""``models.json``: providers and models from the workspace and the user's configuration.

Files are read from ``$PI_DAEMON_HOME/models.json`` (default ``~/.config/pi-daemon``) and
then ``<workspace>/.pi/models.json``; the workspace's entries win. The shape is Pi's:

``{"providers": {NAME: {baseUrl, api, apiKey, headers, compat, models: [...], modelOverrides}}}``

``apiKey`` is a literal or ``$ENV_NAME``; header values resolve the same way. A file that
does not fit the shape is an error that names the file and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..settings import home_dir
from .model import Model, ModelCost

MODEL_FIELDS = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "name": {"type": "string"},
        "api": {"type": "string"},
        "baseUrl": {"type": "string"},
        "reasoning": {"type": "boolean"},
        "input": {"type": "array", "items": {"enum": ["text", "image"]}},
        "cost": {
            "type": "object",
            "properties": {k: {"type": "number", "minimum": 0} for k in ("input", "output", "cacheRead", "cacheWrite")},
        },
        "contextWindow": {"type": "integer", "minimum": 1},
        "maxTokens": {"type": "integer", "minimum": 1},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "compat": {"type": "object"},
    },
}

SCHEMA = {
    "type": "object",
    "properties": {
        "providers": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "baseUrl": {"type": "string"},
                    "api": {"type": "string"},
                    "apiKey": {"type": "string"},
                    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                    "compat": {"type": "object"},
                    "connectTimeoutMs": {"type": "number", "exclusiveMinimum": 0},
                    "readTimeoutMs": {"type": "number", "exclusiveMinimum": 0},
                    "models": {"type": "array", "items": {**MODEL_FIELDS, "required": ["id"]}},
                    "modelOverrides": {"type": "object", "additionalProperties": MODEL_FIELDS},
                },
            },
        }
    },
}


class ConfigError(ValueError):
    pass


def config_files(workspace: str) -> list[Path]:
    return [home_dir() / "models.json", Path(workspace) / ".pi" / "models.json"]


def load_file(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read: {exc.strerror}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: is not valid JSON: {exc}") from None
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}" for e in errors[:5]]
        raise ConfigError(f"{path}: does not fit the models.json shape:\n  " + "\n  ".join(lines))
    return data


def merged_providers(workspace: str) -> tuple[dict[str, dict[str, Any]], list[Path]]:
    """Provider configs of every file that exists, later files winning field by field."""
    providers: dict[str, dict[str, Any]] = {}
    used = []
    for path in config_files(workspace):
        if not path.is_file():
            continue
        used.append(path)
        for name, config in load_file(path).get("providers", {}).items():
            merged = providers.setdefault(name, {})
            for key, value in config.items():
                if key == "models":
                    by_id = {m["id"]: m for m in merged.get("models", [])}
                    by_id.update({m["id"]: m for m in value})
                    merged["models"] = list(by_id.values())
                elif isinstance(value, dict) and isinstance(merged.get(key), dict):
                    merged[key] = {**merged[key], **value}
                else:
                    merged[key] = value
    return providers, used


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
    }
    if "connectTimeoutMs" in config:
        fields["connect_timeout"] = config["connectTimeoutMs"] / 1000
    if "readTimeoutMs" in config:
        fields["read_timeout"] = config["readTimeoutMs"] / 1000
    return Model(**fields)
