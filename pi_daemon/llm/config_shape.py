"""The shape of ``models.json`` (a JSON Schema), and the check of a file against it.

Nearly every file fits, and importing jsonschema to find that out cost about a tenth of
the CPU from spawn to the first prompt's answer: :func:`~pi_daemon.schema_fits.fits` answers
"certainly fits" for the usual files, and jsonschema is asked (and words the errors) only for
the rest (``tests/llm/test_config_shape.py`` checks these schemas on random documents).
"""

from __future__ import annotations

from typing import Any

from ..json_types import JsonObject
from ..schema_fits import fits

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
        "authHeader": {"type": "boolean"},
    },
}

PROVIDER_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "baseUrl": {"type": "string"},
        "api": {"type": "string"},
        "apiKey": {"type": "string"},
        "authHeader": {"type": "boolean"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        "compat": {"type": "object"},
        "connectTimeoutMs": {"type": "number", "exclusiveMinimum": 0},
        "readTimeoutMs": {"type": "number", "exclusiveMinimum": 0},
        "maxAnswerBytes": {"type": "integer", "minimum": 1024},
        "models": {"type": "array", "items": {**MODEL_FIELDS, "required": ["id"]}},
        "modelOverrides": {"type": "object", "additionalProperties": MODEL_FIELDS},
    },
}

SCHEMA = {"type": "object", "properties": {"providers": {"type": "object"}}}


def shape_errors(schema: JsonObject, data: Any) -> list[str]:
    """Where ``data`` does not fit ``schema`` (at most five places); empty when it fits."""
    if fits(schema, data):
        return []
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}" for e in errors[:5]]
