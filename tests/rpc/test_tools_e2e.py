"""Coding tools through the daemon: a loopback model scripts the calls; permissions; user shell."""

import json
import os
import subprocess

import pytest

from helpers import wait_until
from loopback import LoopbackServer, Reply, openai_chunk, openai_sse, openai_text
from client import user_models


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def project(tmp_path, server) -> str:
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, {"providers": {"local": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"id": "coder"}]}}})


def calls(*calls: tuple[str, str, dict]) -> Reply:
    chunks = [openai_chunk({"tool_calls": [{"index": n, "id": cid, "type": "function",
                                            "function": {"name": name, "arguments": json.dumps(args)}}]})
              for n, (cid, name, args) in enumerate(calls)]
    return Reply(body=openai_sse(chunks + [openai_chunk({}, "tool_calls")]))


def results(d, n=1):
    return [e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end"][-n:]


def test_write_read_edit_bash_through_the_daemon(spawn, tmp_path, server):
    (tmp_path / "AGENTS.md").write_text("Always run the tests with `make test`.")
    server.script(
        calls(("w", "write", {"path": "src/app.py", "content": "print('one')\n"})),
        calls(("r", "read", {"path": "src/app.py"}), ("e", "edit", {"path": "src/app.py", "edits": [
            {"oldText": "one", "newText": "two"}]})),
        calls(("b", "bash", {"command": "python3 src/app.py; for i in 1 2 3; do echo step $i; sleep 0.15; done"})),
        Reply(body=openai_text("All done.")),
    )
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "make the app print two"})
    d.wait_event("agent_settled", timeout=30)
    assert (tmp_path / "src" / "app.py").read_text() == "print('two')\n"
    ends = {e["toolCallId"]: e for e in results(d, 4)}
    assert not any(e["isError"] for e in ends.values())
    assert "two" in ends["b"]["result"]["content"][0]["text"] and "step 3" in ends["b"]["result"]["content"][0]["text"]
    assert "+print('two')" in ends["e"]["result"]["details"]["diff"]
    updates = [x["event"] for x in d.events if x["event"]["type"] == "tool_execution_update"]
    assert updates and all(u["toolCallId"] == "b" for u in updates)
    system = server.requests[0].body["messages"][0]
    assert system["role"] == "system" and str(tmp_path) in system["content"]
    assert "Always run the tests with `make test`." in system["content"] and "- edit:" in system["content"]
    assert [t["function"]["name"] for t in server.requests[0].body["tools"]] == [
        "read", "write", "edit", "bash", "grep", "find", "ls", "process_output", "process_kill", "task", "update_plan"]


def test_traversal_is_refused_with_a_clear_result(spawn, tmp_path, server):
    server.script(calls(("x", "write", {"path": "../escape.txt", "content": "nope"})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--allow", "write", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    end = results(d)[0]
    assert end["isError"] and "outside the workspace" in end["result"]["content"][0]["text"]
    assert not (tmp_path.parent / "escape.txt").exists()
    sent = server.requests[1].body["messages"][-1]
    assert sent["role"] == "tool" and "outside the workspace" in sent["content"]


def test_allowed_roots_from_initialize(spawn, tmp_path, server):
    shared = tmp_path.parent / f"shared-{os.getpid()}"
    shared.mkdir(exist_ok=True)
    (shared / "lib.txt").write_text("shared library")
    server.script(calls(("r", "read", {"path": str(shared / "lib.txt")})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.call("initialize", {"allowedRoots": [str(shared)]})
    d.call("prompt", {"text": "read it"})
    d.wait_event("agent_settled")
    assert "shared library" in results(d)[0]["result"]["content"][0]["text"]


def test_permission_round_trip_allow_once_reject_and_allow_always(spawn, tmp_path, server):
    server.script(
        calls(("w1", "write", {"path": "a.txt", "content": "A"})),
        calls(("w2", "write", {"path": "b.txt", "content": "B"})),
        calls(("b1", "bash", {"command": "echo first"})),
        calls(("b2", "bash", {"command": "echo first and more"})),
        Reply(body=openai_text("done")),
    )
    home = tmp_path / "home"
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(home)})
    answers = iter(["allow_once", "reject_once", "allow_always"])
    d.on_request["permission/request"] = lambda params: {"outcome": next(answers)}
    assert d.call("initialize", {"capabilities": {"permissions": True}})["capabilities"]["permissions"] is True
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    asked = [r["params"] for r in d.server_requests if r["method"] == "permission/request"]
    assert [(a["toolName"], a["title"]) for a in asked] == [
        ("write", "Write a.txt"), ("write", "Write b.txt"), ("bash", "Run `echo first`")]
    assert asked[0]["options"] == ["allow_once", "allow_session", "allow_always", "reject_once", "reject_always",
                                 "reject_and_stop"]
    assert asked[0]["remember"] == {"scope": "path", "pattern": "a.txt", "label": "write calls on `a.txt`"}
    assert asked[2]["remember"] == {"scope": "prefix", "pattern": "echo first",
                                    "label": "commands starting with `echo first`"}
    assert asked[0]["toolCallId"] == "w1" and asked[0]["args"] == {"path": "a.txt", "content": "A"}
    assert (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    ends = {e["toolCallId"]: e for e in results(d, 4)}
    assert ends["w2"]["isError"] and "the user declined" in ends["w2"]["result"]["content"][0]["text"]
    assert not ends["b2"]["isError"]  # allow_always covered the prefix "echo first": not asked again
    # remembered in the user's home, keyed by the workspace, not in the workspace
    assert not (tmp_path / ".pi" / "permissions.json").exists()
    remembered = json.loads((home / "permissions.json").read_text())
    assert remembered == {"workspaces": {str(tmp_path.resolve()): {
        "allow": [{"tool": "bash", "scope": "prefix", "pattern": "echo first"}], "reject": []}}}


def test_abort_while_a_permission_request_is_pending(spawn, tmp_path, server):
    server.script(calls(("w", "write", {"path": "a.txt", "content": "A"})), Reply(body=openai_text("never")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    request = d.wait_server_request("permission/request")  # never answered
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    d._wait(lambda: any(m.get("method") == "$/cancelRequest" for m in d.other), 5, "$/cancelRequest")
    cancel = next(m for m in d.other if m.get("method") == "$/cancelRequest")
    assert cancel["params"] == {"id": request["id"], "toolCallId": request["params"]["toolCallId"]}
    assert not (tmp_path / "a.txt").exists()
    d.respond(request["id"], {"outcome": "allow_once"})  # a late answer is harmless
    assert d.call("getState")["isStreaming"] is False


def test_without_the_capability_the_policy_decides(spawn, tmp_path, server):
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text('{"permissions": {"withoutClient": "reject"}}')
    server.script(calls(("w", "write", {"path": "a.txt", "content": "A"}), ("r", "ls", {})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    ends = {e["toolCallId"]: e for e in results(d, 2)}
    assert ends["w"]["isError"] and "no client that can ask" in ends["w"]["result"]["content"][0]["text"]
    assert not ends["r"]["isError"] and d.server_requests == []


def test_user_shell_streams_joins_the_context_and_can_be_aborted(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("seen")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    result = d.call("bash", {"command": "echo visible; echo err >&2; exit 4"})
    assert result == {"output": "visible\nerr\n", "cancelled": False, "truncated": False, "exitCode": 4}
    deltas = "".join(e["event"]["delta"] for e in d.events if e["event"]["type"] == "bash_execution_update")
    assert deltas == "visible\nerr\n"
    hidden = d.call("bash", {"command": "echo secret", "excludeFromContext": True})
    assert hidden["output"] == "secret\n"
    d.call("prompt", {"text": "what did I run?"})
    d.wait_event("agent_settled")
    sent = json.dumps(server.requests[0].body["messages"])
    assert "echo visible" in sent and "exit code 4" in sent and "secret" not in sent
    roles = [m["role"] for m in d.call("getMessages")["messages"]]
    assert roles[:2] == ["bashExecution", "bashExecution"]
    command = f"sleep 3{os.getpid() % 100}.5"
    slow = d.request_async("bash", {"command": command})
    wait_until(lambda: subprocess.run(["pgrep", "-f", command], capture_output=True).stdout, "the command to run")
    assert d.call("abortBash") == {"aborted": True}
    assert d.wait_response(slow)["result"]["cancelled"] is True
    assert d.call("abortBash") == {"aborted": False}


def test_abort_kills_a_running_bash_tool_and_its_children(spawn, tmp_path, server):
    marker = f"sleep 876{os.getpid() % 100}"
    server.script(calls(("b", "bash", {"command": f"{marker} & {marker}"})), Reply(body=openai_text("never")))
    d = spawn("--model", "local/coder", "--allow", "bash", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("tool_execution_start")
    wait_until(lambda: subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout, "the command to start")
    d.call("abort")
    wait_until(lambda: subprocess.run(["pgrep", "-f", marker], capture_output=True).stdout == b"",
               "the command and its children to be gone")
    assert results(d)[0]["isError"]
