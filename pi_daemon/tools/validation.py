"""Tool-call arguments checked against the tool's JSON Schema, with sensible coercion.

Models often send ``"5"`` for an integer, ``"true"`` for a boolean or a JSON-encoded
string for an array. Such values are coerced where the schema asks for the other type;
what still does not validate is reported with every problem and its path, in words a
model can act on.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

from ..json_types import JsonObject
from ..schema_fits import fits

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

_validators: dict[int, tuple[JsonObject, Validator]] = {}


class ToolArgumentError(ValueError):
    pass


def _types(schema: JsonObject) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    return list(t) if isinstance(t, list) else []


def _coerce_scalar(value: str, types: list[str]) -> Any:
    text = value.strip()
    if "integer" in types:
        try:
            return int(text)
        except ValueError:
            pass
    if "number" in types:
        try:
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        except ValueError:
            pass
    if "boolean" in types and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if ("array" in types or "object" in types) and text[:1] in "[{":
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            return value
        if isinstance(parsed, list) and "array" in types:
            return parsed
        if isinstance(parsed, dict) and "object" in types:
            return parsed
    if "null" in types and text == "null":
        return None
    return value


def _coerce(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    types = _types(schema)
    if isinstance(value, str) and types and "string" not in types:
        value = _coerce_scalar(value, types)
    elif isinstance(value, (int, float)) and not isinstance(value, bool) and types == ["string"]:
        value = str(value)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for key, sub in props.items():
            if key in value:
                value[key] = _coerce(value[key], sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [_coerce(item, schema["items"]) for item in value]
    return value


def _validator(schema: JsonObject) -> Validator:
    key = id(schema)
    entry = _validators.get(key)
    if entry is None or entry[0] is not schema:
        import jsonschema  # imported on first use: it is not needed to start the daemon

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        entry = (schema, cls(schema))
        _validators[key] = entry
    return entry[1]


def validate_arguments(schema: JsonObject, args: Any) -> JsonObject:
    """Coerced copy of ``args`` valid under ``schema``; raises ToolArgumentError otherwise."""
    if not isinstance(args, dict):
        raise ToolArgumentError(f"arguments must be a JSON object, got {type(args).__name__}")
    value: JsonObject = _coerce(copy.deepcopy(args), schema)
    if fits(schema, value):  # the usual case, without asking jsonschema
        return value
    errors = sorted(_validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for error in errors:
            where = "/".join(str(p) for p in error.absolute_path) or "(root)"
            lines.append(f"- {where}: {error.message}")
        raise ToolArgumentError("invalid arguments:\n" + "\n".join(lines))
    return value
