"""Params of a request -> the method's attrs class, with errors that name the field."""

from __future__ import annotations

import re
import typing
from typing import Any

import cattrs

from ..converter import camel, from_wire
from ..wire.errors import InvalidParams, shorten


def _describe(exc: BaseException, type_: Any) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    literals = [type_] if typing.get_origin(type_) is typing.Literal else [
        a for a in typing.get_args(type_) if typing.get_origin(a) is typing.Literal
    ]
    if literals:
        return "must be one of " + ", ".join(repr(a) for a in typing.get_args(literals[0]))
    if isinstance(exc, (TypeError, ValueError)) and str(exc):
        return str(exc)
    return f"invalid value ({type(exc).__name__})"


def _camel_path(path: str) -> str:
    return re.sub(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+", lambda m: camel(m.group()), path)


def structure_params(raw: Any, cls: type) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("invalid params: params must be an object")
    try:
        return from_wire(raw, cls)
    except Exception as exc:  # noqa: BLE001 - every structuring failure is the client's
        if isinstance(exc, (cattrs.BaseValidationError, KeyError, TypeError, ValueError)):
            problems = cattrs.transform_error(exc, path="params", format_exception=_describe)
            text = "; ".join(  # paths hold the client's keys: each problem is kept short
                shorten(_camel_path(p.rsplit(" @ ", 1)[1]) + ": " + p.rsplit(" @ ", 1)[0], 200)
                for p in problems[:10]
            )
            raise InvalidParams(f"invalid params: {text}") from None
        raise


def not_negative(name: str, value: int | None) -> None:
    """Refuse a negative count (``name`` is the wire name of the field)."""
    if value is not None and value < 0:
        raise InvalidParams(f"invalid params: params.{name}: must be 0 or more")
