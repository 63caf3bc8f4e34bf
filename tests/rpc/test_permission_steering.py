"""Permission answers that steer, through the daemon: a refusal whose reason the model reads while
the run goes on, an allow with an edited call (what runs is the edit, checked again by the rules),
and reject-and-stop ending the run. A loopback model server scripts the calls and records what the
model was sent."""

import json

import pytest

from client import write_script
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project

from pi_daemon.guard.permissions import REASON_CHARS


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def start(spawn, tmp_path, server, answer):
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(tmp_path / "home")})
    d.on_request["permission/request"] = answer
    d.call("initialize", {"capabilities": {"permissions": True}})
    return d


def run(d, timeout=30):
    d.call("prompt", {"text": "go"})
    return d.wait_event("agent_settled", timeout=timeout)["event"]


def ends(d):
    return {e["event"]["toolCallId"]: e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end"}


def said(end):
    return "".join(c.get("text", "") for c in end["result"]["content"])


def sent_results(request):
    """The tool results a model request carried (OpenAI chat messages of role ``tool``)."""
    return {m["tool_call_id"]: m["content"] for m in request.body["messages"] if m["role"] == "tool"}


def text_of(content):
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_a_refusal_with_a_reason_reaches_the_model_and_the_run_goes_on(spawn, tmp_path, server):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "keep.o").write_text("object")
    server.script(calls(("rm", "bash", {"command": "rm -rf build"})),
                  calls(("long", "bash", {"command": "rm -rf build/keep.o"})),
                  Reply(body=openai_text("Understood, I will use make clean.")))
    reasons = {"rm -rf build": "Use `make clean` instead; build/ has files I keep.",
               "rm -rf build/keep.o": "x" * (REASON_CHARS * 25)}
    d = start(spawn, tmp_path, server, lambda p: {"outcome": "reject_once", "reason": reasons[p["args"]["command"]]})
    settled = run(d)
    assert "stopReason" not in settled and not settled["aborted"]
    assert len(server.requests) == 3  # the run went on after each refusal
    first = ends(d)["rm"]
    assert first["isError"]
    assert said(first) == "The user declined this call: Use `make clean` instead; build/ has files I keep."
    assert text_of(sent_results(server.requests[1])["rm"]) == said(first)  # the model read the user's words
    long = said(ends(d)["long"])
    assert long == "The user declined this call: " + "x" * REASON_CHARS  # bounded
    assert (tmp_path / "build" / "keep.o").read_text() == "object"
    assert "make clean" in d.texts()


def test_an_edited_command_is_what_runs_and_the_model_is_told(spawn, tmp_path, server):
    server.script(calls(("b", "bash", {"command": "echo from-the-model > out.txt"})),
                  Reply(body=openai_text("ok")))
    edited = {"command": "echo from-the-user > out.txt"}
    d = start(spawn, tmp_path, server, lambda p: {"outcome": "allow_once", "editedArgs": edited})
    run(d)
    assert (tmp_path / "out.txt").read_text() == "from-the-user\n"
    starts = [e["event"] for e in d.events if e["event"]["type"] == "tool_execution_start"]
    assert [(s["toolCallId"], s["args"], s.get("editedByUser")) for s in starts] == [
        ("b", {"command": "echo from-the-model > out.txt"}, None), ("b", edited, True)]
    end = ends(d)["b"]
    assert not end["isError"]
    assert said(end).startswith('The user edited this call before it ran; what ran: '
                                '{"command": "echo from-the-user > out.txt"}')
    assert text_of(sent_results(server.requests[1])["b"]).startswith("The user edited this call before it ran")


def test_an_edit_is_checked_again_and_never_widens_what_the_rules_allow(spawn, tmp_path, server):
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "permissions.json").write_text(json.dumps({"reject": [
        {"tool": "bash", "scope": "prefix", "pattern": "rm"}]}))  # a shipped reject rule always applies
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "keep.txt").write_text("kept")
    server.script(calls(("rule", "bash", {"command": "ls"}),
                        ("git", "write", {"path": "notes.txt", "content": "[core]\n\tfsmonitor = ./evil\n"}),
                        ("bad", "bash", {"command": "ls"}),
                        ("shape", "bash", {"command": "ls"}),
                        ("remember", "write", {"path": "a.txt", "content": "A"})),
                  calls(("again", "write", {"path": "b.txt", "content": "B2"}),
                        ("other", "write", {"path": "a.txt", "content": "A2"})),
                  Reply(body=openai_text("done")))
    edits = {"rule": {"outcome": "allow_once", "editedArgs": {"command": "rm keep.txt"}},
             "git": {"outcome": "allow_once", "editedArgs": {"path": ".git/config",
                                                              "content": "[core]\n\tfsmonitor = ./evil\n"}},
             "bad": {"outcome": "allow_once", "editedArgs": {"cmd": "rm keep.txt"}},
             "shape": {"outcome": "allow_once", "editedArgs": "rm keep.txt"},
             "remember": {"outcome": "allow_always", "editedArgs": {"path": "b.txt", "content": "B"}},
             "other": {"outcome": "reject_once"}}
    d = start(spawn, tmp_path, server, lambda p: edits[p["toolCallId"]])
    run(d)
    got = ends(d)
    assert got["rule"]["isError"] and "declined bash calls like the edited one" in said(got["rule"])
    assert got["git"]["isError"] and "inside .git/" in said(got["git"])
    assert (tmp_path / ".git" / "config").read_text() == "[core]\n" and not (tmp_path / "notes.txt").exists()
    assert got["bad"]["isError"] and said(got["bad"]).startswith("The user's edit of this call was not run")
    assert "command" in said(got["bad"])
    assert got["shape"]["isError"] and "cancelled" in said(got["shape"])  # editedArgs not an object
    assert (tmp_path / "keep.txt").read_text() == "kept"
    # "always" with an edit remembered the edited call's rule: b.txt is not asked again, a.txt is
    assert not (tmp_path / "a.txt").exists() and (tmp_path / "b.txt").read_text() == "B2"
    asked = [r["params"]["toolCallId"] for r in d.server_requests if r["method"] == "permission/request"]
    assert asked == ["rule", "git", "bad", "shape", "remember", "other"]


def test_reject_and_stop_ends_the_run_with_no_further_call_or_model_request(spawn, tmp_path, server):
    server.script(calls(("a", "bash", {"command": "echo a > a.txt"}), ("b", "bash", {"command": "echo b > b.txt"})),
                  Reply(body=openai_text("this answer is never asked for")))
    d = start(spawn, tmp_path, server, lambda p: None)  # answered below, once both are waiting
    d.call("prompt", {"text": "go"})
    first = d.wait_server_request("permission/request", 1)
    d.wait_server_request("permission/request", 2)
    assert "reject_and_stop" in first["params"]["options"]
    d.respond(first["id"], {"outcome": "reject_and_stop", "reason": "stop, I will do it myself"})
    settled = d.wait_event("agent_settled", timeout=30)["event"]
    assert settled == {"type": "agent_settled", "aborted": False, "stopReason": "rejected"}
    assert d.wait_event("agent_end")["event"]["stopReason"] == "rejected"
    got = ends(d)
    stopped, other = (got["a"], got["b"]) if first["params"]["toolCallId"] == "a" else (got["b"], got["a"])
    assert said(stopped) == "The user rejected this call and stopped the run: stop, I will do it myself"
    assert said(other).startswith("This call was not run: the user rejected another call")
    assert len(server.requests) == 1  # no further model request
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "b.txt").exists()
    second = [r for r in d.server_requests if r["method"] == "permission/request"][1]
    assert second["id"] in [m["params"]["id"] for m in d.other if m.get("method") == "$/cancelRequest"]  # withdrawn
    assert not d.call("getState")["isStreaming"]


def test_reject_and_stop_in_a_subagent_stops_the_run_that_started_it(spawn, tmp_path):
    """The user's stop is the user's, whichever session asked: the child ends, its ``task`` call says
    so, and the parent makes no further model request."""
    replies = [{"content": [{"type": "toolCall", "id": "t1", "name": "task", "arguments": {"prompt": "child job"}}],
                "stopReason": "toolUse"},
               {"when": "child", "stopReason": "toolUse",
                "content": [{"type": "toolCall", "id": "cw", "name": "write",
                             "arguments": {"path": "a.txt", "content": "A"}}]},
               {"when": "child", "content": [{"type": "text", "text": "child never answers this"}]},
               {"content": [{"type": "text", "text": "parent never answers this"}]}]
    script = write_script(tmp_path / "script.json", replies, modelId="sub")
    d = spawn("--faux-script", str(script), "--model", "faux/sub")
    d.on_request["permission/request"] = lambda p: {"outcome": "reject_and_stop"}
    d.call("initialize", {"capabilities": {"permissions": True}})
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    settled = d.wait_event("agent_settled", session_id=parent, timeout=30)["event"]
    assert settled.get("stopReason") == "rejected"
    end = next(e["event"] for e in d.events if e["sessionId"] == parent
               and e["event"]["type"] == "tool_execution_end" and e["event"]["toolCallId"] == "t1")
    assert end["isError"] and "the user rejected a call of the subagent and stopped the run" in said(end)
    assert "never answers" not in d.texts() and not (tmp_path / "a.txt").exists()
