"""Background processes through the daemon: the agent starts a server, reaches it, clients list
it and it is stopped; and nothing of it outlives its session or the daemon."""

import os
import signal
import time

import pytest

from agent_shell import (bash_call, free_port, home_with, listening, poll, script, tool_ends, unique_seconds,
                         wait_alive, wait_gone)

SANDBOX = pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "no-sandbox"])


def server(port: int) -> str:
    return f"python3 -m http.server {port} --bind 127.0.0.1"


def fetch(port: int) -> str:
    """A command that asks the server for its listing, retrying while it starts (bounded)."""
    get = f"curl -sf http://127.0.0.1:{port}/" if os.path.exists("/usr/bin/curl") else \
        f"python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:{port}/\").read().decode())'"
    return f"for i in $(seq 100); do {get} && exit 0; sleep 0.1; done; exit 1"


def call(name: str, cid: str, **args) -> dict:
    return {"content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args}], "stopReason": "toolUse"}


def start(spawn, tmp_path, sandboxed, *replies):
    # network on: the server's port must be reachable from the agent's next command and from here
    home = home_with(tmp_path, {"sandbox": {"enabled": sandboxed, "network": True}})
    (tmp_path / "index-marker.txt").write_text("hello\n")
    return spawn("--allow", "bash", "--faux-script", script(tmp_path, *replies), "--model", "faux/s",
                 env={"home": home})


def said(end: dict) -> str:
    return "".join(c.get("text", "") for c in end["result"]["content"])


@SANDBOX
def test_the_agent_runs_a_server_in_the_background_reaches_it_and_stops_it(spawn, tmp_path, sandboxed):
    port = free_port()
    d = start(spawn, tmp_path, sandboxed,
              bash_call(server(port), "serve", background=True),
              bash_call(fetch(port), "get"),
              {"content": [{"type": "text", "text": "it serves"}]},
              call("process_output", "out", id="p1"),
              call("process_kill", "kill", id="p1"))
    began = time.monotonic()
    d.call("prompt", {"text": "start a server and look at it"})
    d.wait_event("agent_settled", timeout=30)
    ends = {e["toolCallId"]: e for e in tool_ends(d)}
    assert time.monotonic() - began < 15  # the background call did not wait for the server to end
    started = ends["serve"]
    assert not started["isError"], said(started)
    assert said(started).startswith("Started background process p1 (pid ")
    assert started["result"]["details"]["processId"] == "p1"
    assert not ends["get"]["isError"], said(ends["get"])
    assert "index-marker.txt" in said(ends["get"])  # the server's listing of the workspace

    [info] = d.call("process/list", {})["processes"]
    assert info["id"] == "p1" and info["status"] == "running" and info["command"] == server(port)
    assert d.wait_event("process_started")["event"]["process"]["id"] == "p1"
    output = d.call("process/output", {"id": "p1"})
    assert output["status"] == "running" and output["next"] == len(output["text"].encode())
    assert '"GET / HTTP/1.1" 200' in output["text"]  # the agent's request, in the server's log
    assert d.call("process/output", {"id": "p1", "since": output["next"]})["text"] == ""
    if not sandboxed:
        assert listening(port)

    d.call("prompt", {"text": "what did it log? then stop it"})
    d.wait_event("agent_settled", count=2, timeout=30)
    ends = {e["toolCallId"]: e for e in tool_ends(d)}
    assert '"GET / HTTP/1.1" 200' in said(ends["out"]) and "[p1 is running" in said(ends["out"])
    assert not ends["kill"]["isError"] and "[p1 was stopped" in said(ends["kill"])
    exited = d.wait_event("process_exited")["event"]["process"]
    assert exited["id"] == "p1" and exited["status"] == "killed"
    assert d.call("process/list", {})["processes"][0]["status"] == "killed"
    assert poll(lambda: not listening(port), 2)
    with open(exited["outputPath"]) as f:
        assert '"GET / HTTP/1.1" 200' in f.read()


@SANDBOX
def test_closing_the_session_frees_the_servers_port_within_2_s(spawn, tmp_path, sandboxed):
    port = free_port()
    d = start(spawn, tmp_path, sandboxed, bash_call(server(port), "serve", background=True))
    session = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "serve", "sessionId": session})
    d.wait_event("agent_settled", timeout=30)
    assert poll(lambda: listening(port), 10)
    closing = time.monotonic()
    d.call("session/close", {"sessionId": session})
    assert poll(lambda: not listening(port), max(0.0, 2 - (time.monotonic() - closing)))
    assert d.call("process/list", {})["processes"] == []


@SANDBOX
def test_no_background_process_outlives_a_sigkill_of_the_daemon(spawn, tmp_path, sandboxed):
    mark = unique_seconds()
    d = start(spawn, tmp_path, sandboxed,
              bash_call(f"setsid -f sleep {mark}; sleep {mark}", "a", background=True),
              bash_call(f"sleep {mark}", "b", background=True))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert len(wait_alive(mark, 3)) == 3
    assert [p["status"] for p in d.call("process/list", {})["processes"]] == ["running", "running"]
    os.kill(d.proc.pid, signal.SIGKILL)
    d.proc.wait(10)
    assert wait_gone(mark) == []


def test_the_daemons_exit_ends_its_background_processes(spawn, tmp_path):
    mark = unique_seconds()
    d = start(spawn, tmp_path, False, bash_call(f"sleep {mark}", "a", background=True))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert len(wait_alive(mark)) == 1
    assert d.close() == 0
    assert wait_gone(mark) == []


def test_a_session_runs_at_most_8_and_the_9th_names_them(spawn, tmp_path):
    mark = unique_seconds()
    d = start(spawn, tmp_path, False, *(bash_call(f"sleep {mark}", f"c{i}", background=True) for i in range(9)))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    ends = {e["toolCallId"]: e for e in tool_ends(d)}
    assert all(not ends[f"c{i}"]["isError"] for i in range(8))
    assert ends["c8"]["isError"] and "8 background processes are running" in said(ends["c8"])
    assert "p8 (sleep" in said(ends["c8"])
    assert len(wait_alive(mark, 8)) == 8


def test_a_background_command_is_asked_for_as_any_command(spawn, tmp_path):
    mark = unique_seconds()
    replies = [bash_call(f"sleep {mark}", "a", background=True)]
    d = spawn("--faux-script", script(tmp_path, *replies), "--model", "faux/s")
    asked = []
    d.on_request["permission/request"] = lambda params: (asked.append(params), {"outcome": "reject_once"})[1]
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert asked[0]["toolName"] == "bash" and asked[0]["args"] == {"command": f"sleep {mark}", "background": True}
    assert tool_ends(d)[0]["isError"]
    assert d.call("process/list", {})["processes"] == []
    assert wait_alive(mark, timeout=1) == []


def test_a_flood_of_background_output_is_kept_bounded_in_memory_and_on_disk(spawn, tmp_path):
    size = 70 * 1024 * 1024
    d = start(spawn, tmp_path, False, bash_call(f"yes 0123456789abcdef | head -c {size}", "a", background=True))
    d.call("prompt", {"text": "go"})
    ended = d.wait_event("process_exited", timeout=60)["event"]["process"]
    assert ended["status"] == "exited" and ended["exitCode"] == 0 and ended["outputBytes"] == size
    output = d.call("process/output", {"id": "p1", "since": 0})
    assert output["truncated"] and output["next"] == size
    text = output["text"]
    assert 40 * 1024 < len(text.encode()) <= 50 * 1024 and text.startswith("0123456789abcdef\n")
    line, offset = "0123456789abcdef\n", size - len(text)
    assert text == "".join(line[(offset + i) % len(line)] for i in range(len(text)))  # the very last bytes
    saved = os.path.getsize(ended["outputPath"])
    assert 64 * 1024 * 1024 < saved < 64 * 1024 * 1024 + 100
    with open(ended["outputPath"], "rb") as f:
        f.seek(-60, os.SEEK_END)
        assert f.read().endswith(b"[output beyond 64 MB not saved]\n")


def test_a_process_printing_without_end_does_not_hold_up_the_daemon(spawn, tmp_path):
    d = start(spawn, tmp_path, False, bash_call("yes", "a", background=True))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    slowest = 0.0
    for _ in range(10):
        began = time.monotonic()
        d.call("process/list", {})
        slowest = max(slowest, time.monotonic() - began)
    assert slowest < 1
    assert d.call("process/output", {"id": "p1"})["text"].startswith("y\n")
    assert d.call("process/kill", {"id": "p1"})["status"] == "killed"
