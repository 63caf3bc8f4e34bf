"""docs/protocol.md documents exactly the methods, types and events the daemon has."""

import re
import typing
from pathlib import Path

import attrs
import pytest

from pi_daemon.converter import camel
from pi_daemon.events import AGENT_EVENT_TYPES
from pi_daemon.rpc import methods
from pi_daemon.rpc.registry import CLIENT_REQUESTS, METHODS, NOTIFICATIONS

methods.load_all()

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()


def section(title: str) -> str:
    start = DOC.index(f"\n## {title}\n")
    end = DOC.find("\n## ", start + 1)
    return DOC[start : end if end > 0 else None]


def headings(text: str) -> dict[str, str]:
    """``### `name` `` -> the text up to the next heading."""
    parts = re.split(r"\n### `([^`]+)`\n", text)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def table_fields(text: str) -> list[str]:
    fields, in_table = [], False
    for line in text.splitlines():
        if line.startswith("| `"):
            fields.append(line.split("`")[1])
            in_table = True
        elif in_table and not line.startswith("|"):
            break
    return fields


def wire_fields(cls) -> list[str]:
    # A tag field (``type`` set by the class, not passed in) is the section's name, not a row.
    return [camel(f.name) for f in attrs.fields(cls) if f.metadata.get("wire") is not False and f.init]


def documented_types() -> dict[str, list[str]]:
    """Class name -> the fields of the table that documents it."""
    found: dict[str, list[str]] = {}
    for match in re.finditer(r"\*\*(?:Params|Result)\*\* \(`(\w+)`\)\n\n(\|.*?)(?:\n\n|\Z)", DOC, re.S):
        found.setdefault(match.group(1), table_fields(match.group(2)))
    for match in re.finditer(r"\*\*Params\*\* \(`(\w+)`\): ((?:`\w+`(?:, )?)+)\.", DOC):
        found.setdefault(match.group(1), re.findall(r"`(\w+)`", match.group(2)))
    for name, body in headings(section("Types")).items():
        found.setdefault(name, table_fields(body))
    for name, body in headings(section("Notifications (daemon → client)")).items():
        cls = NOTIFICATIONS[name].params
        found.setdefault(cls.__name__, table_fields(body))
    return found


def shown(tp) -> str:
    """A result type as docs/protocol.md names it: ``Name``, ``Name[]`` (LSP's arrays) or ``Name | null``."""
    if attrs.has(tp):
        return tp.__name__
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is list:
        return f"{shown(args[0])}[]"
    return " | ".join([shown(a) for a in args] + (["null"] if type(None) in typing.get_args(tp) else []))


def classes_in(tp) -> list:
    return [tp] if attrs.has(tp) else [c for a in typing.get_args(tp) for c in classes_in(a)]


def reachable_classes():
    todo = [m.params for m in METHODS.values()] + [m.result for m in METHODS.values() if m.result]
    todo += [m.params for m in NOTIFICATIONS.values()]
    todo += [m.params for m in CLIENT_REQUESTS.values()]
    todo += [c for m in CLIENT_REQUESTS.values() for c in classes_in(m.result)]
    seen = {}
    while todo:
        cls = todo.pop()
        if cls.__name__ in seen:
            continue
        seen[cls.__name__] = cls
        attrs.resolve_types(cls)
        for f in attrs.fields(cls):
            for t in [f.type, *getattr(f.type, "__args__", ())]:
                for inner in [t, *getattr(t, "__args__", ())]:
                    if attrs.has(inner) and inner.__module__ == cls.__module__:
                        todo.append(inner)
    return seen


def undocumented() -> set[str]:
    """Declared methods that docs/protocol.md does not document."""
    return set(METHODS) - set(headings(section("Methods")))


def test_registered_methods_are_exactly_the_documented_ones():
    assert undocumented() == set()
    documented = set(headings(section("Methods")))
    assert all(spec.handler is not None for spec in METHODS.values())
    assert documented == set(METHODS) | {"$/cancelRequest"}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_each_method_names_its_params_and_result_types(name):
    body = headings(section("Methods"))[name]
    spec = METHODS[name]
    if attrs.fields(spec.params):
        assert f"**Params** (`{spec.params.__name__}`)" in body
    else:
        assert "**Params**: none" in body
    if spec.result is not None:
        if attrs.fields(spec.result):
            assert f"**Result** (`{spec.result.__name__}`)" in body
        else:
            assert "**Result**: `{}`" in body
    else:
        assert "Notification" in body


def test_each_request_to_the_client_is_documented_with_its_types():
    documented = headings(section("Requests (daemon → client)"))
    assert set(documented) == set(CLIENT_REQUESTS)
    for name, spec in CLIENT_REQUESTS.items():
        assert f"**Params** (`{spec.params.__name__}`)" in documented[name]
        assert f"**Result** (`{shown(spec.result)}`)" in documented[name]


def test_every_protocol_type_is_documented_with_exactly_its_fields():
    documented = documented_types()
    for name, cls in reachable_classes().items():
        if not attrs.fields(cls):
            continue
        assert name in documented, f"{name} is not documented in docs/protocol.md"
        assert documented[name] == wire_fields(cls), \
            f"{name}: docs/protocol.md has {documented[name]}, the code has {wire_fields(cls)}"


def test_every_event_is_documented_with_exactly_its_fields():
    events = headings(section("Events"))
    types = {attrs.fields(cls).type.default: cls for cls in AGENT_EVENT_TYPES}
    assert set(events) == set(types)
    for name, cls in types.items():
        fields = wire_fields(cls)
        if fields:
            assert table_fields(events[name]) == fields, name
        else:
            assert "No fields." in events[name], name


def test_every_error_code_is_documented():
    from pi_daemon.wire.errors import CODES
    table = section("Messages and errors")
    for code in CODES:
        assert f"| `{code}` |" in table, code


def test_the_live_daemon_serves_every_documented_method(spawn):
    d = spawn("--model", "faux/echo")
    for name in sorted(set(METHODS) - {"exit", "shutdown", "initialize"}):
        reply = d.request(name, {})
        assert reply.get("error", {}).get("code") != -32601, name
    assert d.request("shutdown")["result"] == {}
