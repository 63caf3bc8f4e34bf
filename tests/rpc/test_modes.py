"""Session modes through the real daemon: plan mode refuses what changes things with a result
that names the mode and asks the model for a plan, a switch applies from the next tool call,
auto-edit writes without asking but still asks for commands, and the mode survives a reload."""

import pytest

from loopback import LoopbackServer, Reply, openai_text
from test_permissions_e2e import answer, asked
from test_tools_e2e import calls, project, results


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def test_plan_mode_refuses_writes_and_commands_then_ask_mode_runs_them(spawn, tmp_path, server):
    (tmp_path / "notes.txt").write_text("read me\n")
    server.script(
        calls(("r", "read", {"path": "notes.txt"}), ("w", "write", {"path": "plan.txt", "content": "x"}),
              ("b", "bash", {"command": "touch ran.txt"})),
        Reply(body=openai_text("1. write plan.txt\n2. touch ran.txt")),
        calls(("w2", "write", {"path": "plan.txt", "content": "x"}), ("b2", "bash", {"command": "touch ran.txt"})),
        Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    assert d.call("getState", {})["mode"] == "ask"
    assert d.call("setMode", {"mode": "plan"}) == {"mode": "plan"}
    assert d.wait_event("mode_changed")["event"]["mode"] == "plan"
    d.call("prompt", {"text": "plan it"})
    d.wait_event("agent_settled", timeout=30)
    ends = {e["toolCallId"]: e for e in results(d, 3)}
    assert not ends["r"]["isError"]
    for call_id, tool in (("w", "write"), ("b", "bash")):
        text = ends[call_id]["result"]["content"][0]["text"]
        assert ends[call_id]["isError"] and "plan mode" in text and f"`{tool}`" in text
    assert not (tmp_path / "plan.txt").exists() and not (tmp_path / "ran.txt").exists()
    system = server.requests[0].body["messages"][0]
    assert system["role"] == "system" and "plan mode" in system["content"]

    session_id = d.call("getState", {})["sessionId"]
    d.proc.kill()
    d.proc.wait()
    again = spawn("--model", "local/coder", "--yes", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    assert again.call("getState", {})["mode"] == "plan"  # kept in the session file
    again.call("setMode", {"mode": "ask"})
    again.call("prompt", {"text": "go ahead with the plan"})
    again.wait_event("agent_settled", timeout=30)
    assert not any(e["isError"] for e in results(again, 2))
    assert (tmp_path / "plan.txt").read_text() == "x" and (tmp_path / "ran.txt").exists()
    assert "plan mode" not in server.requests[-1].body["messages"][0]["content"]


def test_a_switch_mid_run_applies_from_the_next_tool_call(spawn, tmp_path, server):
    server.script(calls(("b", "bash", {"command": "echo first"})),
                  calls(("w", "write", {"path": "late.txt", "content": "x"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(tmp_path / "h")})

    def switch_then_allow(params):  # while the command waits for its answer, the user picks plan mode
        d.request_async("setMode", {"mode": "plan"})
        return {"outcome": "allow_once"}

    d.on_request["permission/request"] = switch_then_allow
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    ends = {e["toolCallId"]: e for e in results(d, 2)}
    assert not ends["b"]["isError"]  # already allowed when the mode changed
    assert ends["w"]["isError"] and "plan mode" in ends["w"]["result"]["content"][0]["text"]
    assert not (tmp_path / "late.txt").exists()


def test_auto_edit_writes_and_edits_without_asking_but_asks_for_commands(spawn, tmp_path, server):
    (tmp_path / "a.txt").write_text("one\n")
    server.script(calls(("w", "write", {"path": "b.txt", "content": "B"}),
                        ("e", "edit", {"path": "a.txt", "edits": [{"oldText": "one", "newText": "two"}]}),
                        ("b", "bash", {"command": "touch c.txt"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(tmp_path / "h")})
    d.on_request["permission/request"] = answer({})  # every question refused
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("setMode", {"mode": "auto-edit"})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert [a["toolName"] for a in asked(d)] == ["bash"]
    assert (tmp_path / "b.txt").read_text() == "B" and (tmp_path / "a.txt").read_text() == "two\n"
    assert not (tmp_path / "c.txt").exists()
    bad = d.request("setMode", {"mode": "yolo"})
    assert bad["error"]["code"] == -32602 and "params.mode" in bad["error"]["message"]


def test_the_mode_slash_command(spawn):
    d = spawn("--model", "faux/echo")
    answer = d.call("prompt", {"text": "/mode auto-edit"})
    assert answer["disposition"] == "command" and answer["command"] == {"name": "mode", "result": {"mode": "auto-edit"},
                                                                  "summary": "The mode is now auto-edit."}
    assert d.call("getState", {})["mode"] == "auto-edit" and d.wait_event("mode_changed")["event"]["mode"] == "auto-edit"
    bad = d.request("prompt", {"text": "/mode yolo"})
    assert bad["error"]["code"] == -32602 and "plan, ask, auto-edit" in bad["error"]["message"]
