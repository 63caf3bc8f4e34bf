"""MCP servers through the daemon: real servers over stdio, the loopback model calling their tools."""

import json
import os
import signal
import shutil
import sys
import time
from pathlib import Path

import pytest

from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results

HERE = Path(__file__).resolve().parent
DEMO = [sys.executable, str(HERE / "mcp_demo_server.py")]
EVERYTHING = HERE / "mcp-everything" / "node_modules" / "@modelcontextprotocol" / "server-everything"


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def mcp_json(folder: Path, servers: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def demo(*extra, **env) -> dict:
    entry = {"command": DEMO[0], "args": [DEMO[1], *extra]}
    if env:
        entry["env"] = env
    return entry


def start(spawn, tmp_path, server, *args, servers=None, home=None):
    home = home or tmp_path / "home"
    mcp_json(home, servers if servers is not None else {"demo": demo()})
    return spawn("--model", "local/coder", *args, cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(home)})


def wait_state(d, name, state="ready", timeout=60, session_id=None):
    deadline = time.monotonic() + timeout
    while True:
        params = {"sessionId": session_id} if session_id else {}
        found = {s["name"]: s for s in d.call("listTools", params)["servers"]}
        if name in found and found[name]["state"] == state:
            return found[name]
        assert time.monotonic() < deadline, f"{name} never became {state}: {found.get(name)}"
        time.sleep(0.2)


def run(d, text="go", timeout=60):
    count = len([e for e in d.events if e["event"]["type"] == "agent_settled"])
    d.call("prompt", {"text": text})
    d.wait_event("agent_settled", count + 1, timeout=timeout)


def by_id(d, n):
    return {e["toolCallId"]: e for e in results(d, n)}


def test_tools_are_offered_called_and_their_results_reach_the_model(spawn, tmp_path, server):
    server.script(calls(("a", "demo__add", {"a": 2, "b": 40}), ("p", "demo__picture", {}),
                        ("n", "demo__notes", {}), ("r", "demo__refuse", {"reason": "not today"})),
                  Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server, "--allow", "mcp")
    state = wait_state(d, "demo")
    assert state["toolCount"] == 9 and "demo__add" in state["tools"] and state["transport"] == "stdio"
    listed = {t["name"]: t for t in d.call("listTools")["tools"]}
    assert listed["demo__add"]["source"] == "mcp" and listed["demo__add"]["server"] == "demo"
    assert listed["read"]["source"] == "builtin"
    assert d.call("getState")["mcpServers"][0]["state"] == "ready"
    run(d)
    ends = by_id(d, 4)
    assert ends["a"]["result"]["content"] == [{"type": "text", "text": "42"}] and not ends["a"]["isError"]
    assert [c["type"] for c in ends["p"]["result"]["content"]] == ["text", "image"]
    assert ends["p"]["result"]["content"][1]["mimeType"] == "image/png"
    assert ends["n"]["result"]["content"][0]["text"] == "[resource notes://today]\nbuy milk"
    assert ends["r"]["isError"] and ends["r"]["result"]["content"][0]["text"] == "refused: not today"
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0].body["tools"]}
    assert tools["demo__add"]["description"] == "Add two integers."
    assert set(tools["demo__add"]["parameters"]["properties"]) == {"a", "b"}
    sent = server.requests[1].body["messages"]
    assert any(m["role"] == "tool" and m.get("tool_call_id") == "a" and "42" in json.dumps(m["content"])
               for m in sent)


def test_a_call_asks_permission_per_tool_and_always_is_remembered(spawn, tmp_path, server):
    server.script(calls(("a1", "demo__add", {"a": 1, "b": 1})), calls(("a2", "demo__add", {"a": 2, "b": 2})),
                  calls(("r1", "demo__refuse", {"reason": "x"})), Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server)
    d.on_request["permission/request"] = lambda p: {
        "outcome": "allow_always" if p["toolName"] == "demo__add" else "reject_once"}
    d.call("initialize", {"capabilities": {"permissions": True}})
    wait_state(d, "demo")
    run(d)
    asked = [r["params"] for r in d.server_requests if r["method"] == "permission/request"]
    assert [a["toolName"] for a in asked] == ["demo__add", "demo__refuse"]  # the second add was not asked
    assert asked[0]["remember"]["scope"] == "tool" and asked[0]["title"] == "Call add of the MCP server demo"
    ends = by_id(d, 3)
    assert ends["a1"]["result"]["content"][0]["text"] == "2" and ends["a2"]["result"]["content"][0]["text"] == "4"
    assert ends["r1"]["isError"] and "declined" in ends["r1"]["result"]["content"][0]["text"]
    remembered = json.loads((tmp_path / "home" / "permissions.json").read_text())["workspaces"]
    assert list(remembered.values())[0]["allow"] == [{"tool": "demo__add", "scope": "tool"}]


def test_without_a_client_that_can_ask_an_mcp_call_is_refused_naming_the_flag(spawn, tmp_path, server):
    server.script(calls(("a", "demo__add", {"a": 1, "b": 1})), Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server)
    wait_state(d, "demo")
    run(d)
    end = by_id(d, 1)["a"]
    assert end["isError"] and "--allow demo__add" in end["result"]["content"][0]["text"]


def test_plan_mode_runs_only_the_mcp_tools_their_server_declares_read_only(spawn, tmp_path, server):
    server.script(calls(("a", "demo__add", {"a": 1, "b": 2}), ("r", "demo__refuse", {"reason": "x"})),
                  Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server, "--allow", "mcp")
    wait_state(d, "demo")
    d.call("setMode", {"mode": "plan"})
    run(d)
    ends = by_id(d, 2)
    assert not ends["a"]["isError"] and ends["a"]["result"]["content"][0]["text"] == "3"  # readOnlyHint
    assert ends["r"]["isError"] and "plan mode" in ends["r"]["result"]["content"][0]["text"]


def test_a_crashing_server_fails_the_call_clearly_and_is_restarted_on_next_use(spawn, tmp_path, server):
    count = tmp_path / "starts.txt"
    server.script(calls(("c", "demo__crash", {})), Reply(body=openai_text("it crashed")),
                  calls(("s", "demo__starts", {})), Reply(body=openai_text("back")))
    d = start(spawn, tmp_path, server, "--allow", "mcp", servers={"demo": demo(DEMO_COUNT_FILE=str(count))})
    wait_state(d, "demo")
    run(d)
    crash = by_id(d, 1)["c"]
    assert crash["isError"]
    text = crash["result"]["content"][0]["text"]
    assert "MCP server 'demo' failed during the crash call" in text and "restarted on the next call" in text
    failed = wait_state(d, "demo", "failed")
    assert "crash call" in failed["error"] and failed["toolCount"] == 9  # its tools stay callable
    run(d, "again")
    assert by_id(d, 1)["s"]["result"]["content"][0]["text"] == "2" and not by_id(d, 1)["s"]["isError"]
    assert wait_state(d, "demo")["state"] == "ready"


def test_a_server_that_never_answers_is_aborted_and_the_daemon_goes_on(spawn, tmp_path, server):
    server.script(calls(("h", "demo__hang", {})), calls(("a", "demo__add", {"a": 5, "b": 5})),
                  Reply(body=openai_text("fine")))
    d = start(spawn, tmp_path, server, "--allow", "mcp")
    wait_state(d, "demo")
    d.call("prompt", {"text": "go"})
    d.wait_event("tool_execution_start", timeout=30)
    time.sleep(0.5)
    started = time.monotonic()
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    assert time.monotonic() - started < 10
    hang = by_id(d, 1)["h"]
    assert hang["isError"] and "aborted" in hang["result"]["content"][0]["text"]
    run(d, "again")
    assert by_id(d, 1)["a"]["result"]["content"][0]["text"] == "10"


def test_a_hung_call_times_out_with_a_clear_error(spawn, tmp_path, server):
    server.script(calls(("h", "demo__hang", {})), Reply(body=openai_text("ok")))
    d = start(spawn, tmp_path, server, "--allow", "mcp", servers={"demo": {**demo(), "timeout": 2}})
    wait_state(d, "demo")
    run(d)
    hang = by_id(d, 1)["h"]
    assert hang["isError"] and "did not answer the hang call within 2 s" in hang["result"]["content"][0]["text"]


def test_broken_configuration_is_reported_and_the_rest_works(spawn, tmp_path, server):
    servers = {"demo": demo(), "nocommand": {"args": ["x"]}, "bad name!": demo(), "dies": demo("--fail-start"),
               "sse": {"type": "sse", "url": "http://127.0.0.1:1/sse"}}
    server.script(Reply(body=openai_text("still here")))
    d = start(spawn, tmp_path, server, servers=servers)
    wait_state(d, "demo")
    dies = wait_state(d, "dies", "failed")
    assert "could not start" in dies["error"] and "cannot open its database" in dies["error"]
    problems = d.call("listTools")["problems"]
    assert any("'nocommand'" in p and "needs a command" in p for p in problems)
    assert any("'bad name!'" in p for p in problems) and any("SSE is not" in p for p in problems)
    run(d)
    assert d.texts() == "still here"

    (tmp_path / "home2").mkdir()
    (tmp_path / "home2" / "mcp.json").write_text('{"mcpServers": {"demo": ')
    other = spawn("--model", "local/coder", cwd=str(tmp_path), env={"PI_DAEMON_HOME": str(tmp_path / "home2")})
    listed = other.call("listTools")
    assert listed["servers"] == [] and "cannot be read" in listed["problems"][0]
    assert other.call("getState")["sessionId"]


def test_a_workspace_mcp_json_waits_for_trust(spawn, tmp_path, server):
    ws = project(tmp_path, server)
    mcp_json(Path(ws) / ".pi", {"local": demo()})
    home = tmp_path / "home"
    home.mkdir()
    d = spawn("--model", "local/coder", cwd=ws, env={"PI_DAEMON_HOME": str(home)})
    d.on_request["workspace/trust"] = lambda p: None  # answered below
    d.call("initialize", {"capabilities": {"workspaceTrust": True}})
    question = d.wait_server_request("workspace/trust")
    reasons = {r["field"]: r for r in question["params"]["reasons"]}
    assert "would start the process" in reasons["mcpServers.local"]["effect"]
    assert d.call("listTools")["servers"] == []
    ignored = d.call("getState")["workspaceTrust"]["ignored"]
    assert any(i["field"] == "mcpServers.local" for i in ignored)
    d.respond(question["id"], {"trusted": True})
    assert wait_state(d, "local")["toolCount"] == 9
    assert not any(i["field"] == "mcpServers.local" for i in d.call("getState")["workspaceTrust"]["ignored"])


def test_session_new_brings_servers_for_that_session_only(spawn, tmp_path, server):
    server.script(calls(("a", "mine__add", {"a": 3, "b": 4})), Reply(body=openai_text("ok")))
    d = start(spawn, tmp_path, server, "--allow", "mcp", servers={})
    first = d.call("session/new", {"mcpServers": [{"name": "mine", "command": DEMO[0], "args": [DEMO[1]],
                                                   "env": [{"name": "X", "value": "1"}]}]})["sessionId"]
    assert wait_state(d, "mine", session_id=first)["source"] == "session"
    d.call("prompt", {"text": "go", "sessionId": first})
    d.wait_event("agent_settled", session_id=first, timeout=60)
    assert by_id(d, 1)["a"]["result"]["content"][0]["text"] == "7"
    second = d.call("session/new")["sessionId"]
    assert d.call("listTools", {"sessionId": second})["servers"] == []
    error = d.request("session/new", {"mcpServers": [{"name": "x"}]})["error"]
    assert error["code"] == -32602 and "mcpServers[0]" in error["message"]


def test_a_streamable_http_server_with_headers_from_the_environment(spawn, tmp_path, server):
    import socket
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    http = subprocess.Popen([*DEMO, "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the HTTP MCP server did not start"
                time.sleep(0.2)
        server.script(calls(("t", "web__token", {}), ("a", "web__add", {"a": 1, "b": 2})), Reply(body=openai_text("ok")))
        home = tmp_path / "home"
        mcp_json(home, {"web": {"url": f"http://127.0.0.1:{port}/mcp", "headers": {"X-Token": "${DEMO_TOKEN}"}}})
        d = spawn("--model", "local/coder", "--allow", "mcp", cwd=project(tmp_path, server),
                  env={"PI_DAEMON_HOME": str(home), "DEMO_TOKEN": "t0ken"})
        assert wait_state(d, "web")["transport"] == "http"
        run(d)
        ends = by_id(d, 2)
        assert ends["t"]["result"]["content"][0]["text"] == "t0ken"
        assert ends["a"]["result"]["content"][0]["text"] == "3"
    finally:
        http.kill()
        http.wait()


def test_the_reference_everything_server_from_npm(spawn, tmp_path, server):
    entry = EVERYTHING / "dist" / "index.js"
    assert shutil.which("node") and entry.is_file(), (
        "scripts/test-all installs @modelcontextprotocol/server-everything into tests/rpc/mcp-everything")
    server.script(calls(("e", "everything__echo", {"message": "hello mcp"})), Reply(body=openai_text("ok")))
    d = start(spawn, tmp_path, server, "--allow", "mcp",
              servers={"everything": {"command": "node", "args": [str(entry), "stdio"]}})
    state = wait_state(d, "everything")
    assert "everything__echo" in state["tools"]
    run(d)
    end = by_id(d, 1)["e"]
    assert not end["isError"] and "hello mcp" in end["result"]["content"][0]["text"]


def _marked(value: str) -> list[int]:
    """Pids of live processes whose environment holds ``DEMO_MARK=value``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if f"DEMO_MARK={value}".encode() in environ and state != b"Z":
            found.append(int(pid))
    return found


def test_an_mcp_server_does_not_outlive_a_killed_daemon(spawn, tmp_path, server):
    mark = f"{os.getpid()}-{time.monotonic_ns()}"
    # a server whose process goes on after its stdin closes (here: a shell that sleeps on)
    entry = {"command": "sh", "args": ["-c", f'"{DEMO[0]}" "{DEMO[1]}"; sleep 600'], "env": {"DEMO_MARK": mark}}
    d = start(spawn, tmp_path, server, servers={"demo": entry})
    wait_state(d, "demo")
    assert len(_marked(mark)) == 2
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(10)
    deadline = time.monotonic() + 10
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _marked(mark) == [], "the server outlived the daemon"


def test_a_server_named_by_a_bare_command_is_never_the_workspaces_program(spawn, tmp_path, server):
    """With ``.`` first in PATH, the ``python3`` an MCP server is started with is found in PATH's
    absolute folders, not in the workspace (where the server runs) that ships its own."""
    fired = tmp_path / "fired"
    (tmp_path / "python3").write_text(f"#!/bin/sh\necho ran >> {fired}\n")
    (tmp_path / "python3").chmod(0o755)
    home = tmp_path / "home"
    mcp_json(home, {"demo": {"command": "python3", "args": [DEMO[1]]}})
    path = f".:{Path(sys.executable).parent}:{os.environ['PATH']}"
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(home), "PATH": path})
    wait_state(d, "demo")
    assert not fired.exists()


def test_a_launcher_and_what_it_starts_never_come_from_a_path_folder_in_the_workspace(spawn, tmp_path, server):
    """``<workspace>/.venv/bin`` first in PATH (an activated environment) holds a ``python3``.
    A server named by the bare ``python3``, and one whose launcher (``sh``) looks ``python3``
    up in turn, both start the real one: the launcher is found, and the server's PATH is
    made, from PATH's folders outside the workspace."""
    fired = tmp_path / "fired"
    planted = tmp_path / ".venv" / "bin"
    planted.mkdir(parents=True)
    (planted / "python3").write_text(f'#!/bin/sh\necho ran >> {fired}\nexec "{sys.executable}" "$@"\n')
    (planted / "python3").chmod(0o755)
    home = tmp_path / "home"
    mcp_json(home, {"demo": {"command": "python3", "args": [DEMO[1]]},
                    "launched": {"command": "sh", "args": ["-c", f'exec python3 "{DEMO[1]}"']}})
    path = f"{planted}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(home), "PATH": path})
    wait_state(d, "demo")
    wait_state(d, "launched")
    assert not fired.exists()


def test_a_servers_flood_of_output_is_cut_before_the_model_and_the_session_file(spawn, tmp_path, server):
    server.script(calls(("f", "demo__flood", {"mib": 8})), Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server, "--allow", "mcp")
    wait_state(d, "demo")
    run(d)
    content = by_id(d, 1)["f"]["result"]["content"]
    assert len(content[0]["text"]) <= 256 * 1024 and content[0]["text"].startswith("flood flood")
    assert content[-1]["text"].startswith("[output cut to its first 256 KiB of text")
    assert len(json.dumps(server.requests[1].body)) < 1 << 20
    session = next((tmp_path / ".pi" / "sessions").glob("*.jsonl"))
    assert session.stat().st_size < 2 << 20
