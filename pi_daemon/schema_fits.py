"""A quick "certainly valid" check for the plain subset of JSON Schema this package writes.

``jsonschema`` costs about 80 ms to import and tens of microseconds per call: a tenth of
the CPU from spawn to the first answer when it checked models.json, and most of a tool turn
when it checked a read tool's arguments. The schemas both use (models.json's, the built-in
tools' parameters) need only a few keywords, and valid documents are the common case.
:func:`fits` walks those keywords over the usual JSON values and answers only "certainly
valid"; whatever it is not sure of (a keyword it does not know, ``1.0`` for an integer, a
non-finite number, an invalid value) goes to jsonschema (Draft 2020-12), which also words the
errors. So it never accepts what jsonschema refuses; property tests check that on random
documents (``tests/test_schema_fits.py``, ``tests/llm/test_config_shape.py``).
"""

from __future__ import annotations

import math
from typing import Any, Callable

_ANNOTATIONS = ("description", "title", "default", "examples")
_KNOWN = frozenset(("type", "properties", "additionalProperties", "items", "required", "enum", "minLength",
                    "maxLength", "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum",
                    "exclusiveMaximum", *_ANNOTATIONS))


def _is_number(value: Any) -> bool:
    """An int or a finite float (NaN and infinities, which ``json.loads`` accepts, are left to jsonschema)."""
    return type(value) is int or (type(value) is float and math.isfinite(value))


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: type(v) is str,
    "integer": lambda v: type(v) is int,
    "number": _is_number,
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
    "null": lambda v: v is None,
}
def _is_count(bound: Any) -> bool:
    return type(bound) is int


# keyword -> (what a valid bound is, the values it applies to, whether a value is within the bound)
_BOUNDS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], bool], Callable[[Any, Any], bool]]] = {
    "minLength": (_is_count, _TYPES["string"], lambda v, b: len(v) >= b),
    "maxLength": (_is_count, _TYPES["string"], lambda v, b: len(v) <= b),
    "minItems": (_is_count, _TYPES["array"], lambda v, b: len(v) >= b),
    "maxItems": (_is_count, _TYPES["array"], lambda v, b: len(v) <= b),
    "minimum": (_is_number, _is_number, lambda v, b: v >= b),
    "maximum": (_is_number, _is_number, lambda v, b: v <= b),
    "exclusiveMinimum": (_is_number, _is_number, lambda v, b: v > b),
    "exclusiveMaximum": (_is_number, _is_number, lambda v, b: v < b),
}


def _of_type(kind: Any, value: Any) -> bool:
    if type(kind) is str:
        return kind in _TYPES and _TYPES[kind](value)
    return type(kind) is list and any(type(k) is str and k in _TYPES and _TYPES[k](value) for k in kind)


def fits(schema: Any, value: Any) -> bool:
    """True only if ``value`` is valid under ``schema``; False when it is not or this check cannot tell."""
    if schema is True:
        return True
    if type(schema) is not dict or not _KNOWN.issuperset(schema):
        return False
    if "type" in schema and not _of_type(schema["type"], value):
        return False
    if "enum" in schema:  # strings only: jsonschema's equality between other types has its own rules
        options = schema["enum"]
        if not (type(value) is str and type(options) is list and value in options
                and all(type(o) is str for o in options)):
            return False
    for keyword, (valid_bound, applies, within) in _BOUNDS.items():
        if keyword in schema:  # a value it does not apply to is left to jsonschema
            bound = schema[keyword]
            if not (valid_bound(bound) and applies(value) and within(value, bound)):
                return False
    if "required" in schema:
        required = schema["required"]
        if not (type(value) is dict and type(required) is list
                and all(type(k) is str and k in value for k in required)):
            return False
    if "properties" in schema or "additionalProperties" in schema:
        properties = schema.get("properties", {})
        if type(value) is not dict or type(properties) is not dict:
            return False
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if type(key) is not str or not fits(properties.get(key, extra), item):
                return False
    if "items" in schema and not (type(value) is list and all(fits(schema["items"], item) for item in value)):
        return False
    return True
