"""The editor's language servers as the agent's tools, through the real daemon: a scripted
client declares ``languageFeatures`` and answers the ``editor/*`` requests with LSP shapes."""

import json
import sys
from pathlib import Path

import pytest

from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results

ALL = {"diagnostics": True, "definition": True, "references": True, "documentSymbols": True,
       "workspaceSymbols": True, "hover": True}
LANGUAGE_TOOLS = {"diagnostics", "definition", "references", "symbols", "hover"}


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def span(line: int, start: int, end: int) -> dict:
    return {"start": {"line": line, "character": start}, "end": {"line": line, "character": end}}


def texts(d, ids: str) -> list[str]:
    """The text results of the tool calls with these one-letter ids, in that order (they end in any order)."""
    ends = {e["toolCallId"]: e for e in results(d, len(ids))}
    return [ends[i]["result"]["content"][0]["text"] for i in ids]


def tools_offered(server, n: int = 0) -> set[str]:
    return {t["function"]["name"] for t in server.requests[n].body.get("tools", [])}


class Servers:
    """The client's language servers: what each ``editor/*`` request gets, and what they were asked."""

    def __init__(self, d, root: Path, features: dict) -> None:
        self.asked: list[tuple[str, dict]] = []
        a, b = (root / "a.py").as_uri(), (root / "b.py").as_uri()
        self.answers = {
            "editor/definition": [{"uri": a, "range": span(0, 4, 10)}],
            "editor/references": [{"uri": a, "range": span(0, 4, 10)}, {"uri": b, "range": span(1, 6, 12)},
                                  {"uri": b, "range": span(2, 10, 16)}],
            "editor/documentSymbols": [{"name": "helper", "kind": 12, "range": span(0, 0, 20),
                                        "selectionRange": span(0, 4, 10), "detail": "() -> int",
                                        "children": [{"name": "x", "kind": 13, "range": span(1, 4, 9),
                                                      "selectionRange": span(1, 4, 5)}]}],
            "editor/workspaceSymbols": [{"name": "helper", "kind": 12, "containerName": "a",
                                         "location": {"uri": a, "range": span(0, 4, 10)}}],
            "editor/hover": {"contents": {"kind": "markdown", "value": "```python\ndef helper() -> int\n```"}},
            "editor/diagnostics": {"items": [{"uri": b, "diagnostics": [
                {"range": span(1, 6, 12), "severity": 1, "source": "Pyright", "code": "reportCallIssue",
                 "message": "Expected 0 positional arguments"},
                {"range": span(0, 0, 4), "severity": 2, "message": "Import is unused"}]}]},
        }
        for method in self.answers:
            d.on_request[method] = lambda params, method=method: self.answer(method, params)
        d.call("initialize", {"capabilities": {"languageFeatures": features}})

    def answer(self, method: str, params: dict):
        self.asked.append((method, params))
        return self.answers[method]


def workspace(tmp_path, server) -> str:
    (tmp_path / "a.py").write_text("def helper():\n    x = 1\n    return x\n")
    (tmp_path / "b.py").write_text("from a import helper\nprint(helper(1))  # é\nr = '𝒳'; helper()\n")
    return project(tmp_path, server)


def test_definition_references_symbols_and_hover_round_trip(spawn, tmp_path, server):
    server.script(
        calls(("d", "definition", {"path": "b.py", "line": 2, "symbol": "helper"}),
              ("r", "references", {"path": "a.py", "line": 1, "column": 5}),
              ("s", "symbols", {"path": "a.py"}), ("q", "symbols", {"query": "help"}),
              ("h", "hover", {"path": "b.py", "line": 3, "symbol": "helper"}),
              ("f", "definition", {"path": "b.py", "symbol": "helper"})),
        Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=workspace(tmp_path, server))
    servers = Servers(d, tmp_path, ALL)
    d.call("prompt", {"text": "where is helper?"})
    d.wait_event("agent_settled", timeout=30)
    assert LANGUAGE_TOOLS <= tools_offered(server)
    definition, references, outline, found, hover, first_use = texts(d, "drsqhf")
    assert first_use == definition
    assert definition == "a.py:1:5\n    def helper():"
    assert references == ("a.py:1:5\n    def helper():\nb.py:2:7\n    print(helper(1))  # é\n"
                          "b.py:3:10\n    r = '𝒳'; helper()")  # UTF-16 unit 10 is the 10th character
    assert outline == "function helper (line 1)\n  variable x (line 2)"
    assert found == "a.py:1:5 function helper (in a)\n    def helper():"
    assert hover == "```python\ndef helper() -> int\n```"
    b = (tmp_path / "b.py").as_uri()
    # the named line; without a line, the symbol's first use in the file (the import, after "from a import ")
    assert sorted((p["uri"], p["position"]["line"], p["position"]["character"])
                  for m, p in servers.asked if m == "editor/definition") == [(b, 0, 14), (b, 1, 6)]
    asked = dict(servers.asked)
    # after "r = '𝒳'; " (9 characters) the symbol starts at UTF-16 unit 10: 𝒳 takes two
    assert asked["editor/hover"]["position"] == {"line": 2, "character": 10}
    assert asked["editor/references"]["includeDeclaration"] is True
    assert asked["editor/workspaceSymbols"]["query"] == "help"
    assert all(p["sessionId"] for _, p in servers.asked)


def test_the_first_prompt_is_answered_before_lsprotocol_is_loaded(spawn, tmp_path, server):
    """A client declaring language features (both editors do) does not make the daemon import
    lsprotocol's types (about 0.3 s of CPU) beside its first prompt: they load with the first
    language answer. Seen in the daemon's own import log (``python -X importtime``, written as
    each import ends), read up to a warning the daemon logs after the first answer."""
    server.script(Reply(body=openai_text("hello")),
                  calls(("h", "hover", {"path": "b.py", "line": 3, "symbol": "helper"})),
                  Reply(body=openai_text("ok")))
    d = spawn(cmd=[sys.executable, "-P", "-X", "importtime", "-m", "pi_daemon", "--model", "local/coder"],
              cwd=workspace(tmp_path, server))
    servers = Servers(d, tmp_path, ALL)
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled")
    assert d.texts() == "hello"
    d.send({"jsonrpc": "2.0", "method": "getState"})  # a request sent as a notification: logged, in order
    log = d.wait_stderr(b"was sent without an id") and bytes(d.stderr)
    assert b" pi_daemon.llm.sse_run\n" in log  # the import log, up to the provider the prompt needed
    assert b"lsprotocol" not in log
    d.call("prompt", {"text": "what is helper?"})  # the first language request loads it, and works
    d.wait_event("agent_settled", count=2)
    assert texts(d, "h") == ["```python\ndef helper() -> int\n```"]
    assert [m for m, _ in servers.asked] == ["editor/hover"]
    assert b" lsprotocol.types\n" in d.stderr


def test_diagnostics_are_rendered_errors_first_with_the_source_line(spawn, tmp_path, server):
    server.script(calls(("g", "diagnostics", {"paths": ["b.py"]})), calls(("a", "diagnostics", {})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=workspace(tmp_path, server))
    servers = Servers(d, tmp_path, {"diagnostics": True})
    d.call("prompt", {"text": "does it type-check?"})
    d.wait_event("agent_settled", timeout=30)
    assert tools_offered(server) & LANGUAGE_TOOLS == {"diagnostics"}
    some, every = texts(d, "ga")
    assert some == every == ("1 error(s), 1 warning(s)\n"
                             "b.py:2:7 error: Expected 0 positional arguments [Pyright reportCallIssue]\n"
                             "    print(helper(1))  # é\n"
                             "b.py:1:1 warning: Import is unused\n"
                             "    from a import helper")
    assert [p.get("uris") for _, p in servers.asked] == [[(tmp_path / "b.py").as_uri()], None]


def test_bad_places_and_bad_answers_are_tool_errors_and_the_session_goes_on(spawn, tmp_path, server):
    server.script(
        calls(("1", "definition", {"path": "b.py", "line": 2, "symbol": "nowhere"}),
              ("2", "definition", {"path": "b.py", "line": 99, "column": 1}),
              ("3", "definition", {"path": "../outside.py", "line": 1, "column": 1}),
              ("4", "definition", {"path": "b.py", "line": 1}),
              ("5", "definition", {"path": "b.py", "line": 1, "column": 1}),
              ("6", "definition", {"path": "b.py"}), ("7", "definition", {"path": "b.py", "symbol": "nowhere"})),
        Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=workspace(tmp_path, server))
    servers = Servers(d, tmp_path, ALL)
    servers.answers["editor/definition"] = [{"uri": 42}]  # not LSP's shape
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    ends = {e["toolCallId"]: e for e in results(d, 7)}
    assert all(e["isError"] for e in ends.values())
    symbol, line, outside, neither, shape, nothing, absent = [ends[n]["result"]["content"][0]["text"] for n in "1234567"]
    assert "give the line (with its column or the symbol's name), or the symbol's name alone" in nothing
    assert "'nowhere' is not in b.py" in absent
    assert "'nowhere' is not on line 2 of b.py" in symbol
    assert "b.py has 3 lines; there is no line 99" in line
    assert "outside the workspace" in outside
    assert "give the symbol's name on that line" in neither
    assert "editor/definition is not LSP's shape" in shape
    assert [m for m, _ in servers.asked] == ["editor/definition"]  # only the well-placed call reached the editor


def test_a_client_without_language_features_gets_no_tools_and_no_requests(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=workspace(tmp_path, server))
    answer = d.call("initialize", {"capabilities": {}})
    assert answer["capabilities"].get("languageFeatures") is None
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled", timeout=30)
    assert not tools_offered(server) & LANGUAGE_TOOLS
    assert not [r for r in d.server_requests if r["method"].startswith("editor/")]
    assert json.dumps(server.requests[0].body).count('"diagnostics"') == 0


def test_an_edit_that_breaks_the_code_reports_the_new_errors(spawn, tmp_path, server):
    server.script(
        calls(("e", "edit", {"path": "a.py", "edits": [{"oldText": "    return x\n", "newText": "    return y\n"}]})),
        calls(("w", "write", {"path": "b.py", "content": "from a import helper\nhelper()\n"})),
        Reply(body=openai_text("ok")))
    root = workspace(tmp_path, server)
    (tmp_path / ".pi" / "settings.json").write_text(json.dumps({"diagnostics": {"waitMs": 700}}))
    d = spawn("--model", "local/coder", "--yes", cwd=root)
    servers = Servers(d, tmp_path, {"diagnostics": True})
    unused = {"range": span(0, 0, 4), "severity": 2, "message": "Import is unused"}
    reports = iter([
        [],  # a.py before the edit
        [{"range": span(2, 11, 12), "severity": 1, "source": "Pyright", "message": '"y" is not defined'}],
        [unused],  # b.py before the write
        [{**unused, "range": span(3, 0, 4)}],  # after it: the same warning, moved: nothing new
    ])

    def report(params):
        servers.asked.append(("editor/diagnostics", params))
        return {"items": [{"uri": params["uris"][0], "diagnostics": next(reports)}]}

    d.on_request["editor/diagnostics"] = report
    d.call("prompt", {"text": "change it"})
    d.wait_event("agent_settled", timeout=30)
    edited, written = results(d, 2)
    assert edited["result"]["content"][-1]["text"] == (
        "\n\nThis change introduced 1 error(s) and 0 warning(s) (the editor's language servers):\n"
        "a.py:3:12 error: \"y\" is not defined")
    assert edited["result"]["details"]["introduced"] == [
        {"line": 3, "column": 12, "severity": "error", "message": '"y" is not defined', "source": "Pyright"}]
    assert "introduced" not in json.dumps(written["result"])
    shown = [e["event"] for e in d.events if e["event"]["type"] == "diagnostics"]
    assert shown == [{"type": "diagnostics", "toolCallId": "e", "path": str(tmp_path / "a.py"),
                      "introduced": edited["result"]["details"]["introduced"]}]
    assert [p.get("waitMs") for _, p in servers.asked] == [None, 700, None, 700]
    assert [p["uris"] for _, p in servers.asked] == [[(tmp_path / n).as_uri()] for n in ("a.py", "a.py", "b.py", "b.py")]
    assert (tmp_path / "a.py").read_text().endswith("return y\n")  # the edit itself landed
