"""JSON values that cross the wire whose shape is given elsewhere, named for the schema.

A tool call's arguments are a JSON object whose shape is that tool's argument schema (the
built-in tools' are ``x-tools`` in protocol.schema.json; an MCP tool's comes from its
server). :data:`JsonObject` is that type: a plain ``dict`` in Python, and one named
``$defs/JsonObject`` in the schema and the generated client types.
"""

from __future__ import annotations

from typing import Annotated, Any


class SchemaAlias:
    """Marks an ``Annotated`` alias the protocol schema defines once under ``name``."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.name = name
        self.schema = schema


JsonObject = Annotated[dict[str, Any], SchemaAlias("JsonObject", {
    "description": "a JSON object; a tool call's arguments have the shape of that tool's argument schema",
    "type": "object",
})]
