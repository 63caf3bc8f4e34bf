"""Start-up: what a client sends at spawn, before the daemon has read its models, is served in
order and answered once, in both framings; the daemon runs nothing the workspace ships."""

import json
import subprocess
import sys

import pytest

from client import clean_env, text, write_script
from pi_daemon.client import daemon_command


def _args(tmp_path, *replies, delay_ms=1):
    script = write_script(tmp_path / "script.json", list(replies), modelId="s", chunkSize=2, delayMs=delay_ms)
    return ["--faux-script", str(script), "--model", "faux/s", "--log-level", "debug"]


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_requests_sent_at_spawn_are_each_answered_once(spawn, tmp_path, framing):
    d = spawn(*_args(tmp_path, text("first answer"), text("second answer")), framing=framing)
    init = d.request_async("initialize", {"protocolVersion": 1})
    prompt = d.request_async("prompt", {"text": "hello"})
    state = d.request_async("getState")
    unknown = d.request_async("noSuchMethod")
    bad = d.request_async("prompt", {"text": 42})
    d.notify("noSuchNotification", {})
    assert d.wait_response(init)["result"]["protocolVersion"] == 1
    assert d.wait_response(prompt)["result"] == {"disposition": "started"}
    assert d.wait_response(state)["result"]["model"]["id"] == "s"
    assert d.wait_response(unknown)["error"] == {"code": -32601, "message": "unknown method: noSuchMethod"}
    error = d.wait_response(bad)["error"]
    assert error["code"] == -32602 and "params.text" in error["message"]
    d.wait_event("agent_settled")
    assert "first answer" in d.texts()
    again = d.request_async("prompt", {"text": "again"})
    assert d.wait_response(again)["result"] == {"disposition": "started"}
    d.wait_event("agent_settled", 2)
    assert "second answer" in d.texts()
    assert d.response_counts == {i: 1 for i in (init, prompt, state, unknown, bad, again)}


def test_a_running_request_can_be_cancelled(spawn, tmp_path):
    d = spawn(*_args(tmp_path, text("z" * 400), delay_ms=10))
    d.request_async("initialize", {"protocolVersion": 1})
    d.call("prompt", {"text": "go"})
    waiting = d.request_async("waitForIdle")
    d.wait_event("message_update", 3)  # the run streams, so waitForIdle is still waiting
    d.notify("$/cancelRequest", {"id": waiting})
    assert d.wait_response(waiting)["error"]["code"] == -32800
    d.notify("$/cancelRequest", {"id": waiting})  # finished: ignored
    d.notify("$/cancelRequest", {"id": [1]})  # names no request: ignored, with a warning
    assert d.call("getState")["isStreaming"] in (True, False)
    d.wait_event("agent_settled", timeout=30)
    assert d.response_counts[waiting] == 1
    assert d.wait_stderr(b"$/cancelRequest needs")


# Modules the daemon imports at start-up, before it has asked whether the workspace is trusted.
_SHADOWED = ("json", "attr", "argparse", "logging", "typing", "contextlib", "functools", "re", "enum")


@pytest.mark.parametrize("command", [daemon_command(), [sys.executable, "-m", "pi_daemon"]],
                         ids=["daemon_command", "python -m pi_daemon"])
def test_modules_in_the_workspace_do_not_run_at_start_up(tmp_path, command):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for name in _SHADOWED:
        (workspace / f"{name}.py").write_text(f"open({str(tmp_path / ('ran-' + name))!r}, 'w').close()\n")
    lines = (b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
             b'{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"hi"}}\n')
    out = subprocess.run([*command, "--model", "faux/echo"], cwd=workspace, env=clean_env(), input=lines,
                         capture_output=True, timeout=30)
    assert sorted(p.name for p in tmp_path.glob("ran-*")) == []
    assert out.returncode == 0, out.stderr
    replies = [json.loads(line) for line in out.stdout.splitlines()]
    assert replies[0]["result"]["protocolVersion"] == 1
    assert {"jsonrpc": "2.0", "id": 2, "result": {"disposition": "started"}} in replies
