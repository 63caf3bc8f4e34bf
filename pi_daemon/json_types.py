"""Names for JSON data at the edges: what ``json.loads`` returns and what a wire dict holds.

A provider's request body and stream events, a settings file, a tool's arguments: their shape
is the other side's, read defensively (``.get`` with a fallback, ``isinstance`` where a value
matters). The values stay ``Any`` so those readers need no cast at every step; the names say
that the data is JSON and keep it apart from the typed classes in ``messages`` and ``events``.
"""

from __future__ import annotations

from typing import Any, TypeAlias

JsonValue: TypeAlias = Any
"""A decoded JSON value: ``None``, ``bool``, ``int``, ``float``, ``str``, a list or an object."""

JsonObject: TypeAlias = dict[str, JsonValue]
"""A JSON object, as decoded or as built to be encoded."""

JsonArray: TypeAlias = list[JsonValue]
"""A JSON array, as decoded or as built to be encoded."""
