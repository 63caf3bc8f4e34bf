"""The shape of ``models.json`` (a JSON Schema), and the check of a file against it.

Nearly every file fits, and importing jsonschema to find that out cost about a tenth of
the CPU from spawn to the first prompt's answer. :func:`fits` walks the few keywords these
schemas use over the usual JSON values and answers only "certainly fits"; anything it is
not sure of (a keyword it does not know, a float where an integer is asked, a non-finite
number, a type that JSON does not produce) goes to jsonschema, which also words the errors.
It never accepts what jsonschema refuses (``tests/llm/test_config_shape.py`` checks it on
random documents).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ..json_types import JsonObject

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
        "models": {"type": "array", "items": {**MODEL_FIELDS, "required": ["id"]}},
        "modelOverrides": {"type": "object", "additionalProperties": MODEL_FIELDS},
    },
}

SCHEMA = {"type": "object", "properties": {"providers": {"type": "object"}}}

_KNOWN = frozenset(("type", "properties", "additionalProperties", "items", "required", "enum", "minLength",
                    "minimum", "exclusiveMinimum"))


def _is_number(value: Any) -> bool:
    """An int, or a finite float (bool is not a number in JSON Schema; NaN and the
    infinities, which ``json.loads`` accepts, are left to jsonschema)."""
    return type(value) is int or (type(value) is float and math.isfinite(value))


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "string": lambda v: type(v) is str,
    "boolean": lambda v: type(v) is bool,
    "number": _is_number,
    "integer": lambda v: type(v) is int,  # 1.0 is one too for jsonschema: left to it
}


def fits(schema: JsonObject, value: Any) -> bool:
    """True when ``value`` certainly fits ``schema``; False when it does not or when this
    check cannot tell (then ask jsonschema)."""
    if type(schema) is not dict or not _KNOWN.issuperset(schema):
        return False
    kind = schema.get("type")
    if kind is not None and not (type(kind) is str and kind in _TYPES and _TYPES[kind](value)):
        return False
    if "enum" in schema:  # strings only: jsonschema's equality between other types has its own rules
        options = schema["enum"]
        if not (type(value) is str and type(options) is list and value in options
                and all(type(o) is str for o in options)):
            return False
    if "minLength" in schema and not (type(value) is str and type(schema["minLength"]) is int
                                      and len(value) >= schema["minLength"]):
        return False
    if "minimum" in schema and not (_is_number(value) and _is_number(schema["minimum"])
                                    and value >= schema["minimum"]):
        return False
    if "exclusiveMinimum" in schema and not (_is_number(value) and _is_number(schema["exclusiveMinimum"])
                                             and value > schema["exclusiveMinimum"]):
        return False
    if "required" in schema:
        required = schema["required"]
        if not (type(value) is dict and type(required) is list and all(type(k) is str and k in value
                                                                       for k in required)):
            return False
    if "properties" in schema or "additionalProperties" in schema:
        if type(value) is not dict:
            return False
        properties = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if type(key) is not str:
                return False
            sub = properties.get(key, extra)
            if sub is not None and not fits(sub, item):
                return False
    if "items" in schema:
        if type(value) is not list or not all(fits(schema["items"], item) for item in value):
            return False
    return True


def shape_errors(schema: JsonObject, data: Any) -> list[str]:
    """Where ``data`` does not fit ``schema`` (at most five places); empty when it fits."""
    if fits(schema, data):
        return []
    import jsonschema

    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}" for e in errors[:5]]
