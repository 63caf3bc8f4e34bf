"""Every frame the tests exchange with the daemon, checked against protocol.schema.json.

The test client (:mod:`client`) hands each frame it sends and receives to a
:class:`Connection`; what does not fit the schema is collected in :data:`VIOLATIONS`,
which an autouse fixture (``tests/conftest.py``) turns into a failure of the test that
produced it.

What is checked: everything the daemon sends (replies against the method's result,
errors against the declared codes, notifications and daemon -> client requests against
their params), and what the client sent when the daemon accepted it (a request's params
once it was answered with a result). Frames a test sends on purpose to be refused are
not the protocol's concern.
"""

from __future__ import annotations

import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "protocol.schema.json"
VIOLATIONS: list[str] = []
CHECKED = [0]  # frames checked so far (reported at the end of the run)
_lock = threading.Lock()
# Handled by the JSON-RPC layer itself, not declared as methods.
_BUILTIN = {"$/cancelRequest": {"type": "object", "required": ["id"]}}


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


_one_of = jsonschema.Draft202012Validator.VALIDATORS["oneOf"]
_branches: dict[int, dict[tuple[str, Any], dict[str, Any]]] = {}


def _tagged_branches(one_of: list[dict[str, Any]]) -> dict[tuple[str, Any], dict[str, Any]]:
    """(tag field, value) -> branch, for a oneOf of $refs to objects tagged by a const field."""
    found = _branches.get(id(one_of))
    if found is None:
        found = {}
        for branch in one_of:
            definition = schema()["$defs"].get(branch.get("$ref", "").rsplit("/", 1)[-1], {})
            for tag in ("type", "role"):
                const = definition.get("properties", {}).get(tag, {}).get("const")
                if const is not None:
                    found[(tag, const)] = branch
        _branches[id(one_of)] = found
    return found


def _tagged_one_of(validator: Any, one_of: Any, instance: Any, subschema: Any) -> Any:
    """oneOf of a tagged union: validate against the branch the tag names (the same verdict, 20x faster)."""
    if isinstance(instance, dict):
        branches = _tagged_branches(one_of)
        for tag in ("type", "role"):
            branch = branches.get((tag, instance.get(tag)))
            if branch is not None:
                yield from validator.descend(instance, branch)
                return
    yield from _one_of(validator, one_of, instance, subschema)


_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, {"oneOf": _tagged_one_of})


@cache
def _validator(ref: str) -> Any:
    root = schema()
    sub = {"$schema": root["$schema"], "$defs": root["$defs"], "x-tools": root["x-tools"], **json.loads(ref)}
    return _Validator(sub)


def problems(value: Any, subschema: dict[str, Any]) -> list[str]:
    validator = _validator(json.dumps(subschema, sort_keys=True))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}"
            for e in validator.iter_errors(value)]


def _report(where: str, found: list[str]) -> None:
    if found:
        with _lock:
            VIOLATIONS.append(f"{where}: " + "; ".join(found[:5]))


_connections: list["Connection"] = []


class Connection:
    """The frames of one daemon connection, recorded as they pass and checked by :func:`take`.

    Checking later keeps the test client's reader thread fast: a daemon whose output is
    not read promptly would slow down.
    """

    def __init__(self) -> None:
        self.finished = False  # set when the daemon's output has ended
        self.sent_requests: dict[Any, dict[str, Any]] = {}
        self.frames: list[tuple[bool, Any]] = []  # (sent by the client, message)
        with _lock:
            _connections.append(self)

    def client_sent(self, message: Any) -> None:
        self.frames.append((True, message))

    def daemon_sent(self, message: Any) -> None:
        self.frames.append((False, message))

    def check(self) -> None:
        frames, self.frames = self.frames, []
        with _lock:
            CHECKED[0] += len(frames)
        for by_client, message in frames:
            if by_client:
                self._client_sent(message)
            elif isinstance(message, dict):
                self._daemon_sent(message)

    def _client_sent(self, message: Any) -> None:
        if not isinstance(message, dict) or "method" not in message:
            return  # a reply to a daemon -> client request: the daemon judges it
        if "id" in message:
            self.sent_requests[message["id"]] = message

    def _daemon_sent(self, message: dict[str, Any]) -> None:
        root = schema()
        if "method" in message:
            method = message["method"]
            table = root["x-clientRequests"] if "id" in message else root["x-notifications"]
            spec = table.get(method) or ({"params": _BUILTIN[method]} if method in _BUILTIN else None)
            if spec is None:
                _report(f"daemon sent undeclared {method}", ["not in the schema"])
                return
            _report(f"daemon -> client {method} params", problems(message.get("params"), spec["params"]))
            if method == "agent/event" and isinstance(message.get("params"), dict):
                self._tool_details(message["params"].get("event"))
            return
        request = self.sent_requests.pop(message.get("id"), None) if "id" in message else None
        if "error" in message:
            error = message["error"]
            found = problems(error, {"type": "object", "required": ["code", "message"],
                                     "properties": {"code": {"type": "integer"}, "message": {"type": "string"}}})
            if not found and str(error["code"]) not in root["x-errors"]:
                found = [f"error code {error['code']} is not declared"]
            _report(f"error reply {message.get('id')!r}", found)
            return
        if request is None:
            return  # a reply to a frame the test wrote raw: its method is unknown here
        method = request["method"]
        spec = root["x-methods"].get(method)
        if spec is None or "result" not in spec:
            _report(f"reply to {method}", ["the daemon answered a method the schema does not declare as a request"])
            return
        _report(f"{method} params (accepted)", problems(request.get("params", {}), spec["params"]))
        _report(f"{method} result", problems(message.get("result"), spec["result"]))


    def _tool_details(self, event: Any) -> None:
        """A built-in tool's result ``details`` fit the shape the schema declares for that tool."""
        if not isinstance(event, dict):
            return
        found = []
        if event.get("type") == "tool_execution_end" and isinstance(event.get("result"), dict):
            found.append((event.get("toolName"), event["result"].get("details")))
        message = event.get("message")
        if isinstance(message, dict) and message.get("role") == "toolResult":
            found.append((message.get("toolName"), message.get("details")))
        tools = schema()["x-tools"]
        for name, details in found:
            spec = tools.get(name, {}).get("details")
            if spec is not None and details is not None:
                _report(f"{name} tool details", problems(details, spec))


def take() -> list[str]:
    """Check the frames recorded so far; the violations found since the last call."""
    with _lock:
        connections = list(_connections)
        _connections[:] = [c for c in connections if c.frames or not c.finished]
    for connection in connections:
        connection.check()
    with _lock:
        found = list(VIOLATIONS)
        VIOLATIONS.clear()
    return found
