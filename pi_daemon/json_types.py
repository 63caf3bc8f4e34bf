"""Names for JSON data at the edges: what ``json.loads`` returns and what a wire dict holds.

A provider's request body and stream events, a settings file, a tool's arguments: their shape
is the other side's, read defensively (``.get`` with a fallback, ``isinstance`` where a value
matters). The values stay ``Any`` so those readers need no cast at every step; the names say
that the data is JSON and keep it apart from the typed classes in ``messages`` and ``events``.

Where such an object crosses the protocol (a tool call's arguments, whose shape is that tool's
argument schema: ``x-tools`` in protocol.schema.json for the built-in tools, the server's for an
MCP tool), :data:`JsonObject` is one named ``$defs/JsonObject`` in the schema and the generated
client types.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias


class SchemaAlias:
    """Marks an ``Annotated`` alias the protocol schema defines once under ``name``."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.schema = schema


JsonValue: TypeAlias = Any
"""A decoded JSON value: ``None``, ``bool``, ``int``, ``float``, ``str``, a list or an object."""

JsonObject: TypeAlias = Annotated[dict[str, JsonValue], SchemaAlias("JsonObject", {
    "description": "a JSON object; a tool call's arguments have the shape of that tool's argument schema",
    "type": "object",
})]
"""A JSON object, as decoded or as built to be encoded."""

JsonArray: TypeAlias = list[JsonValue]
"""A JSON array, as decoded or as built to be encoded."""
