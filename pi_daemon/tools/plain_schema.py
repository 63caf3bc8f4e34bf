"""A quick acceptance check for the plain subset of JSON Schema that tool parameters use.

``jsonschema`` costs about 80 ms to import and tens of microseconds per call: most of a
tool turn when a model reads files in a loop. Every built-in tool's schema uses only a few
keywords (types, properties, required, additionalProperties, items, and numeric / length
bounds), and valid arguments are the common case. :func:`accepts` answers "certainly valid"
for such a schema and value; anything else (a keyword outside the subset, a value it is
unsure of, an invalid value) goes to ``jsonschema``, which still writes every error message.
So it must never accept what ``jsonschema`` (Draft 2020-12) rejects; it may decline what
``jsonschema`` accepts (``1.0`` for an integer, say).
"""

from __future__ import annotations

from typing import Any

from ..json_types import JsonObject

# Annotations: no effect on validity.
_ANNOTATIONS = frozenset({"description", "title", "default", "examples"})
_CHECKED = frozenset({"type", "properties", "required", "additionalProperties", "items", "minLength", "maxLength",
                      "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
_plain: dict[int, tuple[JsonObject, bool]] = {}


def is_plain(schema: JsonObject) -> bool:
    """Whether :func:`accepts` can judge values against ``schema`` (cached per schema object)."""
    entry = _plain.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, _subset(schema))
        _plain[id(schema)] = entry
    return entry[1]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _subset(schema: Any) -> bool:
    if not isinstance(schema, dict) or not all(k in _CHECKED or k in _ANNOTATIONS for k in schema):
        return False
    t = schema.get("type")
    types = [t] if isinstance(t, str) else t
    if t is not None and not (isinstance(types, list) and types and all(x in _TYPES for x in types)):
        return False
    props = schema.get("properties", {})
    if not (isinstance(props, dict) and all(_subset(s) for s in props.values())):
        return False
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(r, str) for r in required)):
        return False
    extra = schema.get("additionalProperties", True)
    if not (isinstance(extra, bool) or _subset(extra)):
        return False
    if "items" in schema and not _subset(schema["items"]):
        return False
    for key in ("minLength", "maxLength", "minItems", "maxItems"):
        if key in schema and not (isinstance(schema[key], int) and not isinstance(schema[key], bool)):
            return False
    return all(_number(schema[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
               if k in schema)


def _of_type(value: Any, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if t == "number":
        return _number(value)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    return value is None


def accepts(schema: Any, value: Any) -> bool:
    """True only if ``value`` is valid under ``schema``, which :func:`is_plain` approved."""
    if isinstance(schema, bool):
        return schema
    t = schema.get("type")
    if t is not None and not (_of_type(value, t) if isinstance(t, str) else any(_of_type(value, x) for x in t)):
        return False
    if isinstance(value, dict):
        props = schema.get("properties", {})
        if any(r not in value for r in schema.get("required", ())):
            return False
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = props.get(key, extra)
            if sub is not True and not accepts(sub, item):
                return False
    elif isinstance(value, list):
        if not schema.get("minItems", 0) <= len(value) <= schema.get("maxItems", len(value)):
            return False
        items = schema.get("items")
        if items is not None and not all(accepts(items, item) for item in value):
            return False
    elif isinstance(value, str):
        if not schema.get("minLength", 0) <= len(value) <= schema.get("maxLength", len(value)):
            return False
    elif _number(value):
        # Written so that NaN fails every bound present (jsonschema's verdict is then left to it).
        if "minimum" in schema and not value >= schema["minimum"]:
            return False
        if "maximum" in schema and not value <= schema["maximum"]:
            return False
        if "exclusiveMinimum" in schema and not value > schema["exclusiveMinimum"]:
            return False
        if "exclusiveMaximum" in schema and not value < schema["exclusiveMaximum"]:
            return False
    return True
