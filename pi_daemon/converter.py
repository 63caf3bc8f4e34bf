"""The one cattrs converter: camelCase JSON dicts <-> snake_case attrs classes.

Every attrs class in the project is converted by this converter. Field rules:

* names are renamed snake_case -> camelCase on the wire;
* an optional field (``X | None = None``) is omitted from the wire while it is ``None``;
* a field declared with ``metadata={"wire": False}`` lives only in-process and never
  reaches the wire (e.g. the cumulative ``partial`` of streaming events).

Tagged unions (content blocks by ``type``, messages by ``role``, events by ``type``)
register their own structure hooks next to the classes that form them.
"""

from __future__ import annotations

import functools
import typing
from typing import Any, Callable

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

WIRE_ONLY_IN_PROCESS = {"wire": False}


@functools.cache
def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _optional(field: attrs.Attribute[Any]) -> bool:
    return field.default is None and type(None) in typing.get_args(field.type)


def _overrides(cls: type) -> dict[str, Any]:
    attrs.resolve_types(cls)
    result = {}
    for field in attrs.fields(cls):
        in_process_only = field.metadata.get("wire") is False
        result[field.name] = override(
            rename=camel(field.name),
            omit_if_default=_optional(field),
            omit=in_process_only,
        )
    return result


def _unstructure_factory(cls: type) -> Callable[[Any], Any]:
    # cattrs asks again for the hook of a class each time it builds one of a class that
    # holds it (a message in message_start, message_end, turn_end, ...): build it once.
    hook = _unstructure_hooks.get(cls)
    if hook is None:
        hook = _unstructure_hooks[cls] = make_dict_unstructure_fn(cls, converter, **_overrides(cls))
    return hook


def _structure_factory(cls: type) -> Callable[[Any, Any], Any]:
    # The same overrides: names renamed, in-process fields left at their defaults.
    return make_dict_structure_fn(cls, converter, **_overrides(cls))


def _strict(kind: type, *also: type) -> Callable[[Any, Any], Any]:
    accepted = (kind, *also)

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is kind:  # the common case, first: loading a session structures many
            return value
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {kind.__name__}, got boolean")
        if not isinstance(value, accepted):
            raise TypeError(f"expected {kind.__name__}, got {_json_type(value)}")
        return float(typing.cast(float, value)) if kind is float else value

    return hook


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
             float: "number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


class _Converter(cattrs.Converter):
    """Forgets the unstructure hooks built so far when one is registered (as cattrs forgets
    its cache then): a hook built earlier may hold the hook it replaces."""

    def register_unstructure_hook(self, *args: Any, **kwargs: Any) -> Any:
        _unstructure_hooks.clear()
        return super().register_unstructure_hook(*args, **kwargs)

    def register_unstructure_hook_func(self, *args: Any, **kwargs: Any) -> Any:
        _unstructure_hooks.clear()
        return super().register_unstructure_hook_func(*args, **kwargs)

    def register_unstructure_hook_factory(self, *args: Any, **kwargs: Any) -> Any:
        _unstructure_hooks.clear()
        return super().register_unstructure_hook_factory(*args, **kwargs)


_unstructure_hooks: dict[type, Callable[[Any], Any]] = {}
converter = _Converter()
# JSON input is checked, not cast: "5" is no int here and 0 is no bool.
converter.register_structure_hook(str, _strict(str))
converter.register_structure_hook(int, _strict(int))
converter.register_structure_hook(float, _strict(float, int))
converter.register_structure_hook(bool, _strict(bool))
converter.register_unstructure_hook_factory(attrs.has, _unstructure_factory)
converter.register_structure_hook_factory(attrs.has, _structure_factory)


def to_wire(obj: Any) -> Any:
    """attrs object (or containers of them) -> JSON-native value."""
    return converter.unstructure(obj)


def from_wire(data: Any, cls: Any) -> Any:
    """JSON-native value -> instance of ``cls``; raises cattrs errors on bad shapes."""
    return converter.structure(data, cls)
