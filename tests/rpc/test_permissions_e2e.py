"""Permissions through the daemon: what "always" covers, where it is kept, timeouts, no client."""

import json

import pytest

from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results

from pi_daemon.guard import trust


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def asked(d, tool=None):
    return [r["params"] for r in d.server_requests
            if r["method"] == "permission/request" and (tool is None or r["params"]["toolName"] == tool)]


def one_call_each(*specs):
    return [calls(spec) for spec in specs] + [Reply(body=openai_text("done"))]


def answer(mapping):
    """Answer by (tool, command or path); the first match in ``mapping`` wins, else reject_once."""
    def handler(params):
        key = params["args"].get("command", params["args"].get("path"))
        for (tool, target), outcome in mapping.items():
            if tool == params["toolName"] and target in (key, "*"):
                return {"outcome": outcome}
        return {"outcome": "reject_once"}
    return handler


def start(spawn, tmp_path, server, *args, home=None):
    env = {"PI_DAEMON_HOME": str(home or tmp_path / "home")}
    d = spawn("--model", "local/coder", *args, cwd=project(tmp_path, server), env=env)
    return d


def run(d, timeout=30):
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=timeout)


ATTACKS = [
    "ls -la ; touch x1", "ls -la && touch x2", "ls -la | sh", "ls -la $(touch x3)", "ls -la `touch x4`",
    "ls -la > x5", "ls -la <(touch x6)", "LD_PRELOAD=x7 ls -la", "(ls -la; touch x8)", "bash -c 'ls -la; touch x9'",
    "eval 'ls -la; touch x10'", "ls -la\ntouch x11",
]


def test_always_allow_for_ls_la_covers_no_compound_substitution_or_redirection(spawn, tmp_path, server):
    server.script(*one_call_each(("b0", "bash", {"command": "ls -la"}),
                                 *[(f"a{n}", "bash", {"command": c}) for n, c in enumerate(ATTACKS)],
                                 ("b1", "bash", {"command": "ls -la"}), ("b2", "bash", {"command": "ls -la && ls -la"})))
    d = start(spawn, tmp_path, server)
    d.on_request["permission/request"] = answer({("bash", "ls -la"): "allow_always"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d, timeout=60)
    commands = [a["args"]["command"] for a in asked(d)]
    assert commands == ["ls -la", *ATTACKS]  # every attack asked; the plain repeats were not
    assert asked(d)[0]["remember"]["scope"] == "exact" and asked(d)[0]["remember"]["pattern"] == "ls -la"
    assert not any((tmp_path / f"x{n}").exists() for n in range(1, 12))
    ends = {e["toolCallId"]: e for e in results(d, len(ATTACKS) + 3)}
    assert not ends["b1"]["isError"] and not ends["b2"]["isError"]


def test_always_allow_for_one_write_or_edit_covers_only_that_path(spawn, tmp_path, server):
    (tmp_path / "a.txt").write_text("one")
    server.script(*one_call_each(("w1", "write", {"path": "a.txt", "content": "two"}),
                                 ("w2", "write", {"path": "./a.txt", "content": "three"}),
                                 ("w3", "write", {"path": "b.txt", "content": "B"}),
                                 ("e1", "edit", {"path": "a.txt", "edits": [{"oldText": "three", "newText": "4"}]}),
                                 ("e2", "edit", {"path": "a.txt", "edits": [{"oldText": "4", "newText": "5"}]})))
    d = start(spawn, tmp_path, server)
    d.on_request["permission/request"] = answer({("write", "a.txt"): "allow_always", ("edit", "a.txt"): "allow_always"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert [(a["toolName"], a["args"]["path"]) for a in asked(d)] == [("write", "a.txt"), ("write", "b.txt"),
                                                                      ("edit", "a.txt")]
    assert (tmp_path / "a.txt").read_text() == "5" and not (tmp_path / "b.txt").exists()


def test_the_agent_cannot_grant_itself_bash_by_writing_permissions_json(spawn, tmp_path, server):
    server.script(*one_call_each(("w1", "write", {"path": "a.txt", "content": "A"}),
                                 ("w2", "write", {"path": ".pi/permissions.json",
                                                  "content": json.dumps({"allow": [{"tool": "bash"}]})}),
                                 ("b", "bash", {"command": "touch pwned"})))
    d = start(spawn, tmp_path, server)
    # "always" for the first write; even a careless "once" for the second one
    d.on_request["permission/request"] = answer({("write", "a.txt"): "allow_always", ("write", "*"): "allow_once"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert [a["args"]["command"] for a in asked(d, "bash")] == ["touch pwned"]
    assert not (tmp_path / "pwned").exists()


def test_workspace_permissions_json_rejects_always_allows_only_when_trusted(spawn, tmp_path, server, monkeypatch):
    home = tmp_path / "home"
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "permissions.json").write_text(json.dumps(
        {"allow": [{"tool": "bash"}], "reject": [{"tool": "write", "scope": "path", "pattern": "locked/**"}]}))
    script = [("b", "bash", {"command": "touch ran"}), ("w", "write", {"path": "locked/x.txt", "content": "x"})]
    server.script(*one_call_each(*script))
    d = start(spawn, tmp_path, server, home=home)
    d.on_request["permission/request"] = answer({("write", "*"): "allow_once"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert [a["toolName"] for a in asked(d)] == ["bash"]  # untrusted: its allow is ignored; its reject is not
    ends = {e["toolCallId"]: e for e in results(d, 2)}
    assert ends["w"]["isError"] and "declined" in ends["w"]["result"]["content"][0]["text"]
    assert not (tmp_path / "ran").exists() and not (tmp_path / "locked").exists()
    d.close()

    monkeypatch.setenv("PI_DAEMON_HOME", str(home))
    trust.set_trusted(tmp_path, True)
    server.script(*one_call_each(*script))
    d = start(spawn, tmp_path, server, home=home)
    d.on_request["permission/request"] = answer({("write", "*"): "allow_once"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert asked(d) == [] and (tmp_path / "ran").exists()  # trusted: its allow applies
    assert not (tmp_path / "locked").exists()


def test_allow_session_lasts_for_the_session_only(spawn, tmp_path, server):
    home = tmp_path / "home"
    server.script(*one_call_each(("b1", "bash", {"command": "echo hi"}), ("b2", "bash", {"command": "echo hi"})))
    d = start(spawn, tmp_path, server, home=home)
    d.on_request["permission/request"] = answer({("bash", "echo hi"): "allow_session"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert len(asked(d)) == 1 and not any(e["isError"] for e in results(d, 2))
    assert not (home / "permissions.json").exists()
    d.close()
    server.script(*one_call_each(("b3", "bash", {"command": "echo hi"})))
    d = start(spawn, tmp_path, server, home=home)
    d.on_request["permission/request"] = answer({})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert len(asked(d)) == 1  # a restart forgets it


def _unanswered(d, tmp_path):
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    request = d.wait_server_request("permission/request")
    d.wait_event("agent_settled")
    cancels = [m for m in d.other if m.get("method") == "$/cancelRequest"]
    assert [c["params"] for c in cancels] == [{"id": request["id"], "toolCallId": request["params"]["toolCallId"]}]
    timeout = next(e["event"] for e in d.events if e["event"]["type"] == "permission_timeout")
    end = results(d)[0]
    assert end["isError"] and "nobody answered" in end["result"]["content"][0]["text"]
    assert not (tmp_path / "a.txt").exists()
    return request, timeout


def test_an_unanswered_request_times_out_as_a_reject(spawn, tmp_path, server):
    server.script(*one_call_each(("w", "write", {"path": "a.txt", "content": "A"})))
    d = start(spawn, tmp_path, server, "--permission-timeout", "0.5")
    request, timeout = _unanswered(d, tmp_path)
    assert request["params"]["timeoutSeconds"] == 0.5
    assert timeout == {"type": "permission_timeout", "toolCallId": "w", "toolName": "write", "timeoutSeconds": 0.5}
    d.respond(request["id"], {"outcome": "allow_once"})  # a late answer is harmless
    assert d.call("getState")["isStreaming"] is False and not (tmp_path / "a.txt").exists()


def test_the_timeout_comes_from_settings(spawn, tmp_path, server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text('{"permissions": {"timeoutSeconds": 0.4}}')
    server.script(*one_call_each(("w", "write", {"path": "a.txt", "content": "A"})))
    d = start(spawn, tmp_path, server, home=home)
    request, timeout = _unanswered(d, tmp_path)
    assert request["params"]["timeoutSeconds"] == 0.4 and timeout["timeoutSeconds"] == 0.4


def test_without_a_client_that_can_ask_changes_are_refused_unless_allowed(spawn, tmp_path, server):
    script = [("w", "write", {"path": "a.txt", "content": "A"}), ("b", "bash", {"command": "touch ran"})]
    server.script(*one_call_each(*script))
    d = start(spawn, tmp_path, server)  # piped use: no initialize, no capability
    run(d)
    ends = {e["toolCallId"]: e for e in results(d, 2)}
    for call_id, tool in (("w", "write"), ("b", "bash")):
        message = ends[call_id]["result"]["content"][0]["text"]
        assert ends[call_id]["isError"] and f"--allow {tool}" in message and "--yes" in message
    assert not (tmp_path / "a.txt").exists() and not (tmp_path / "ran").exists()
    d.close()
    server.script(*one_call_each(*script))
    d = start(spawn, tmp_path, server, "--allow", "write,bash")
    run(d)
    assert (tmp_path / "a.txt").exists() and (tmp_path / "ran").exists()


def test_reject_always_for_a_prefix_refuses_it_inside_any_compound_command(spawn, tmp_path, server):
    home = tmp_path / "home"
    server.script(*one_call_each(("b1", "bash", {"command": "git push origin main"}),
                                 ("b2", "bash", {"command": "echo ok && git push --force"}),
                                 ("b3", "bash", {"command": "echo $(git push)"})))
    d = start(spawn, tmp_path, server, home=home)
    d.on_request["permission/request"] = answer({("bash", "git push origin main"): "reject_always"})
    d.call("initialize", {"capabilities": {"permissions": True}})
    run(d)
    assert [a["args"]["command"] for a in asked(d)] == ["git push origin main"]
    assert asked(d)[0]["remember"]["pattern"] == "git push"
    ends = {e["toolCallId"]: e for e in results(d, 3)}
    assert all(ends[c]["isError"] and "for good" in ends[c]["result"]["content"][0]["text"] for c in ("b2", "b3"))
    stored = json.loads((home / "permissions.json").read_text())["workspaces"][str(tmp_path.resolve())]
    assert stored == {"allow": [], "reject": [{"tool": "bash", "scope": "prefix", "pattern": "git push"}]}
