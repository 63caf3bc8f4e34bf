"""The protocol as JSON Schema (2020-12), derived from the declaration in :mod:`.registry`.

``python -m pi_daemon.rpc.schema --write`` regenerates every artefact derived from it:
``protocol.schema.json`` and the editor clients' types (:mod:`.codegen`); ``--check``
exits 1 when one of them is stale.

The schema's ``$defs`` hold every attrs class that crosses the wire (by class name, fields
in camelCase) and the named unions (``AgentEvent``, ``AgentMessage``, ...). The messages
themselves are listed under ``x-methods`` (client -> daemon), ``x-notifications`` and
``x-clientRequests`` (daemon -> client), each with a ``$ref`` to its params and result;
``x-errors`` lists every error code; ``x-tools`` the built-in tools' argument schemas and
the shape of their results' ``details``.

Objects the daemon sends are closed (``additionalProperties: false``): it sends exactly
what is declared. A method's top-level params object is open: unknown fields are ignored,
so a newer client can talk to an older daemon.
"""

from __future__ import annotations

import argparse
import json
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import attrs

from ..converter import camel
from ..events import AGENT_EVENT_TYPES, AgentEvent, AssistantMessageDelta
from ..messages import (
    AgentMessageUnion,
    AssistantContent,
    ContentBlock,
    StopReason,
    UnknownMessage,
    UserContent,
    known_roles,
)
from ..json_types import SchemaAlias
from ..session.entry_types import (
    ENTRY_CLASSES,
    FilesTouched,
    SessionEntry,
    SessionHeader,
    ShapedAs,
    StoredFileChange,
    UnknownEntry,
    known_entry_types,
)
from ..tools.details import TOOL_DETAILS
from . import methods
from ..wire.errors import CODES
from .registry import CLIENT_REQUESTS, METHODS, NOTIFICATIONS, MethodSpec
from .types import PROTOCOL_VERSION, PermissionOutcome, QueueModeName, StreamingBehavior, ThinkingLevelName

methods.load_all()

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "protocol.schema.json"
DIALECT = "https://json-schema.org/draft/2020-12/schema"

NAMED_UNIONS: list[tuple[Any, str]] = [
    (AgentEvent, "AgentEvent"),
    (AssistantMessageDelta, "AssistantMessageDelta"),
    (AgentMessageUnion, "AgentMessage"),
    (ContentBlock, "ContentBlock"),
    (AssistantContent, "AssistantContent"),
    (UserContent, "UserContent"),
    (StopReason, "StopReason"),
    (PermissionOutcome, "PermissionOutcome"),
    (QueueModeName, "QueueMode"),
    (StreamingBehavior, "StreamingBehavior"),
    (ThinkingLevelName, "ThinkingLevel"),
    (SessionEntry, "SessionEntry"),
]

_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"},
    bool: {"type": "boolean"}, type(None): {"type": "null"},
}


class _Builder:
    def __init__(self) -> None:
        self.defs: dict[str, Any] = {}
        self.owners: dict[str, Any] = {}
        self.open_classes: set[type] = {spec.params for spec in METHODS.values()}
        sent_by_client = [spec.params for spec in METHODS.values()]
        sent_by_client += [spec.result for spec in CLIENT_REQUESTS.values() if spec.result is not None]
        self.input_classes: set[type] = set()
        for tp in sent_by_client:
            _reachable(tp, self.input_classes)
        # A session file's lines are read like params: fields may be missing, others may be there.
        stored = {*ENTRY_CLASSES, SessionHeader, FilesTouched, StoredFileChange}
        self.input_classes |= stored
        self.open_classes |= stored

    def ref(self, name: str) -> dict[str, Any]:
        return {"$ref": f"#/$defs/{name}"}

    def _claim(self, name: str, owner: Any) -> bool:
        """True when ``name`` still has to be defined; two owners of one name are a bug."""
        if name in self.owners:
            if self.owners[name] != owner:
                raise ValueError(f"two protocol types are both called {name}: {self.owners[name]} and {owner}")
            return False
        self.owners[name] = owner
        self.defs[name] = {}  # placeholder: recursive types end here
        return True

    def type_schema(self, tp: Any) -> dict[str, Any]:
        if tp is Any or tp is object:
            return {}
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        for union, name in NAMED_UNIONS:
            if tp == union:
                if self._claim(name, union):
                    literal = typing.get_origin(union) is Literal
                    self.defs[name] = ({"enum": list(typing.get_args(union))} if literal else
                                       {"oneOf": [self.type_schema(a) for a in typing.get_args(union)]})
                return self.ref(name)
        if tp is UnknownMessage:
            return self.unknown("UnknownMessage", tp, "role", known_roles(),
                                "a message of a role this daemon does not know, kept exactly as read")
        if tp is UnknownEntry:
            return self.unknown("UnknownEntry", tp, "type", known_entry_types(),
                                "an entry of a type this daemon does not know, kept exactly as read")
        if attrs.has(tp):
            return self.class_schema(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is Annotated:
            shaped = next((m for m in tp.__metadata__ if isinstance(m, ShapedAs)), None)
            if shaped is not None:  # passed through as read, with the shape of shaped.tp
                return self.type_schema(shaped.tp)
            alias = next((m for m in tp.__metadata__ if isinstance(m, SchemaAlias)), None)
            if alias is None:
                return self.type_schema(args[0])
            if self._claim(alias.name, alias):
                self.defs[alias.name] = dict(alias.schema)
            return self.ref(alias.name)
        if origin is Literal:
            return {"const": args[0]} if len(args) == 1 else {"enum": list(args)}
        if origin in (Union, types.UnionType):
            if type(None) in args:  # X | None: a named union X stays named
                rest = tuple(a for a in args if a is not type(None))
                inner = rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007 (built from a tuple)
                return {"anyOf": [self.type_schema(inner), {"type": "null"}]}
            return {"anyOf": [self.type_schema(a) for a in args]}
        if origin in (list, tuple, typing.Sequence) or tp in (list, tuple):
            return {"type": "array", "items": self.type_schema(args[0]) if args else {}}
        if origin is dict or tp is dict:
            return {"type": "object", "additionalProperties": self.type_schema(args[1]) if args else {}}
        raise TypeError(f"no JSON Schema for {tp!r}")

    def unknown(self, name: str, owner: type, tag: str, known: list[str], description: str) -> dict[str, Any]:
        """An object whose ``tag`` is none of the ``known`` ones, kept as it is."""
        if self._claim(name, owner):
            self.defs[name] = {
                "description": description, "type": "object", "required": [tag],
                "properties": {tag: {"type": "string", "not": {"enum": sorted(known)}}},
            }
        return self.ref(name)

    def class_schema(self, cls: type) -> dict[str, Any]:
        name = cls.__name__
        if not self._claim(name, cls):
            return self.ref(name)
        hints = typing.get_type_hints(cls, include_extras=True)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            if field.metadata.get("wire") is False:
                continue
            key = camel(field.name)
            tp = hints[field.name]
            omitted_when_none = field.default is None and type(None) in typing.get_args(tp)
            if omitted_when_none and cls not in self.input_classes:
                tp = Union[tuple(a for a in typing.get_args(tp) if a is not type(None))]  # never null on the wire
            schema = self.type_schema(tp)
            # What the daemon sends always has every field but the omitted ones; a client may
            # leave out any field with a default.
            if cls in self.input_classes:
                needed = field.default is attrs.NOTHING or not field.init
            else:
                needed = not omitted_when_none
            if needed:
                required.append(key)
            properties[key] = schema
        definition: dict[str, Any] = {"type": "object", "properties": properties}
        if cls.__doc__ and not cls.__doc__.startswith(f"{name}("):
            definition["description"] = " ".join(cls.__doc__.split())
        if required:
            definition["required"] = required
        if cls not in self.open_classes:
            definition["additionalProperties"] = False
        self.defs[name] = definition
        return self.ref(name)

    def message(self, spec: MethodSpec[Any, Any]) -> dict[str, Any]:
        entry: dict[str, Any] = {"summary": spec.summary, "params": self.type_schema(spec.params)}
        if spec.result is not None:
            entry["result"] = self.type_schema(spec.result)
        if spec.errors:
            entry["errors"] = sorted({e.code for e in spec.errors}, reverse=True)
        return entry


def _reachable(tp: Any, found: set[type]) -> None:
    """Add every attrs class ``tp`` mentions to ``found``."""
    if attrs.has(tp):
        if tp in found:
            return
        found.add(tp)
        hints = typing.get_type_hints(tp)
        for field in attrs.fields(tp):
            _reachable(hints[field.name], found)
        return
    for arg in typing.get_args(tp):
        _reachable(arg, found)


def tools_schema(b: _Builder) -> dict[str, Any]:
    """The built-in tools: the JSON Schema of their arguments and the shape of their ``details``."""
    from ..session.subagents import TaskTool
    from ..tools.builtin import TOOL_CLASSES
    from ..tools.plan import UpdatePlanTool
    from ..tools.process_tools import PROCESS_TOOL_CLASSES
    from ..tools.question import AskUserTool

    tools: dict[str, Any] = {}
    for cls in (*TOOL_CLASSES, *PROCESS_TOOL_CLASSES, TaskTool, UpdatePlanTool, AskUserTool):
        entry: dict[str, Any] = {"description": cls.description, "arguments": cls.parameters}
        if cls.name in TOOL_DETAILS:
            entry["details"] = b.type_schema(TOOL_DETAILS[cls.name])
        tools[cls.name] = entry
    return tools


def build() -> dict[str, Any]:
    """The schema of the protocol as the registry declares it now."""
    b = _Builder()
    schema: dict[str, Any] = {
        "$schema": DIALECT,
        "$id": "https://github.com/pi-daemon/pi-daemon/protocol.schema.json",
        "title": "pi-daemon JSON-RPC protocol",
        "description": "Generated by `python -m pi_daemon.rpc.schema --write` from pi_daemon/rpc; do not edit.",
        "x-protocolVersion": PROTOCOL_VERSION,
        "x-methods": {name: b.message(spec) for name, spec in sorted(METHODS.items())},
        "x-notifications": {name: b.message(spec) for name, spec in sorted(NOTIFICATIONS.items())},
        "x-clientRequests": {name: b.message(spec) for name, spec in sorted(CLIENT_REQUESTS.items())},
        "x-errors": {str(code): cls.meaning for code, cls in sorted(CODES.items(), reverse=True)},
    }
    schema["x-tools"] = tools_schema(b)
    # A permission request's args passed the tool's argument schema already (a tool call whose
    # args do not is answered with an error result, never asked about): for a built-in tool
    # they are checked against it. tool_execution_start/update carry the model's args as sent.
    b.defs["PermissionRequestParams"]["allOf"] = [
        {"if": {"properties": {"toolName": {"const": name}}, "required": ["toolName"]},
         "then": {"properties": {"args": {"$ref": f"#/x-tools/{name}/arguments"}}}}
        for name in schema["x-tools"]]
    for union, name in NAMED_UNIONS:  # named even where no method mentions them yet
        b.type_schema(union)
    schema["$defs"] = dict(sorted(b.defs.items()))
    return schema


def dumps(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


def artefacts() -> dict[Path, str]:
    """Every file derived from the declaration -> its content."""
    from .codegen import lua, typescript

    schema = build()
    return {
        SCHEMA_FILE: dumps(schema),
        ROOT / "editor-clients" / "vscode" / "src" / "protocol.ts": typescript(schema),
        ROOT / "editor-clients" / "nvim" / "lua" / "pi" / "protocol.lua": lua(schema),
        Path(__file__).with_name("initialize_names.py"): initialize_names(),
    }


def initialize_names() -> str:
    """:mod:`.initialize_names`: what ``initialize`` lists, written out so that answering it
    imports neither the handlers nor the event classes."""
    from ..llm.model import THINKING_LEVELS

    def names(values: list[str]) -> str:
        return "(\n" + "".join(f"    {json.dumps(v)},\n" for v in values) + ")"

    requests = sorted(m for m, spec in METHODS.items() if spec.is_request)
    notifications = sorted([m for m, spec in METHODS.items() if not spec.is_request] + ["$/cancelRequest"])
    events = [attrs.fields(cls).type.default for cls in AGENT_EVENT_TYPES]
    return (
        '"""What ``initialize`` lists. Generated by ``python -m pi_daemon.rpc.schema --write`` from the\n'
        'method declarations, the event classes and the thinking levels; do not edit."""\n\n'
        f"REQUEST_NAMES = {names(requests)}\n"
        f"NOTIFICATION_NAMES = {names(notifications)}\n"
        f"EVENT_NAMES = {names(events)}\n"
        f"THINKING_LEVEL_NAMES = {names(list(THINKING_LEVELS))}\n"
    )


def stale() -> list[Path]:
    return [path for path, text in artefacts().items()
            if not path.exists() or path.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pi_daemon.rpc.schema",
                                     description="Print the protocol's JSON Schema, or write/check the generated files.")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help="regenerate protocol.schema.json and the client types")
    group.add_argument("--check", action="store_true", help="exit 1 when a generated file is stale")
    args = parser.parse_args(argv)
    if args.write:
        for path, text in artefacts().items():
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.check:
        old = stale()
        for path in old:
            print(f"stale: {path.relative_to(ROOT)} (run python -m pi_daemon.rpc.schema --write)", file=sys.stderr)
        return 1 if old else 0
    sys.stdout.write(dumps(build()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
