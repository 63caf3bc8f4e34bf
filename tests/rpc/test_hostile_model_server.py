"""A hostile or broken model server cannot exhaust the daemon's memory, through the real daemon:
an endless line, an endless event, a gzip bomb, an endless or bombed ``/props`` body, an answer
past ``maxAnswerBytes``, and an endless valid stream while the client does not read stdout."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from client import clean_env
from hostile_server import HostileServer, endless_body, endless_event, endless_line, endless_valid, gzip_bomb
from pi_daemon.client import daemon_command
from test_malformed import rss_mib
from client import user_models

RSS_CAP_MIB = 300


def workspace(tmp_path: Path, server: HostileServer, **provider) -> str:
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, {"providers": {"local": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"id": "coder"}], **provider}}})


def settled_within_memory(d, timeout: float = 60) -> tuple[dict, float]:
    """The run's last error (the ``agent_settled`` awaited) and the most RSS seen meanwhile;
    fails as soon as the daemon passes the bound, so a failing run does not eat the machine."""
    deadline, peak = time.monotonic() + timeout, 0.0
    while not any(e["event"]["type"] == "agent_settled" for e in d.events):
        peak = max(peak, rss_mib(d.proc.pid))
        if peak > RSS_CAP_MIB:
            d.kill()
            pytest.fail(f"the daemon grew to {peak:.0f} MiB")
        assert time.monotonic() < deadline, "no agent_settled"
        time.sleep(0.05)
    ends = [e["event"] for e in d.events if e["event"]["type"] == "message_end"
            and e["event"]["message"]["role"] == "assistant"]
    return ends[-1]["message"], peak


@pytest.fixture
def hostile():
    made = []

    def make(*args, **kw) -> HostileServer:
        made.append(HostileServer(*args, **kw))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.mark.parametrize("body, packed, says", [
    (endless_line, False, "a line of its event stream longer than 8 MiB"),
    (endless_event, False, "an event of more than 16 MiB"),
    (lambda: iter([gzip_bomb(prefix=b"data: ")]), True, "compressed its answer (content-encoding: gzip)"),
])
def test_an_endless_or_exploding_answer_fails_the_run_naming_the_server(spawn, tmp_path, hostile, body, packed, says):
    server = hostile(body, post_gzip=packed)
    d = spawn("--model", "local/coder", cwd=workspace(tmp_path, server))
    d.call("prompt", {"text": "hi"})
    message, peak = settled_within_memory(d)
    assert message["stopReason"] == "error" and says in message["errorMessage"]
    assert server.url in message["errorMessage"]
    assert "auto_retry_start" not in d.event_types()  # the server would only send the same again
    assert d.call("getState")["isStreaming"] is False  # still serving


def test_an_answer_past_max_answer_bytes_fails_the_run(spawn, tmp_path, hostile):
    server = hostile(endless_valid)
    d = spawn("--model", "local/coder", cwd=workspace(tmp_path, server, maxAnswerBytes=2 << 20))
    d.call("prompt", {"text": "hi"})
    message, _ = settled_within_memory(d)
    assert message["stopReason"] == "error" and "more than 2097152 bytes (maxAnswerBytes" in message["errorMessage"]


@pytest.mark.parametrize("get, packed", [(endless_body, False), (lambda: iter([gzip_bomb()]), True)])
def test_an_endless_or_exploding_props_probe_is_cut_and_the_run_goes_on(spawn, tmp_path, hostile, get, packed):
    reply = ('data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,'
             '"delta":{"content":"fine"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n').encode()
    server = hostile(lambda: iter([reply]), get, get_gzip=packed)
    d = spawn("--model", "local/coder", cwd=workspace(tmp_path, server))
    d.call("prompt", {"text": "hi"})
    message, _ = settled_within_memory(d)
    assert message["content"][0]["text"] == "fine"
    d.wait_stderr(b"compressed its answer" if packed else b"answered with more than 1048576 bytes")
    assert "GET /props" in server.requests


def test_a_client_that_stops_reading_holds_the_model_server_back(tmp_path, hostile):
    """Nothing reads the daemon's stdout: its output stops at about 1 MiB, the stream's events
    wait, and the server's socket is no longer read; the daemon's memory stays flat."""
    server = hostile(endless_valid)
    proc = subprocess.Popen(daemon_command("--model", "local/coder"), cwd=workspace(tmp_path, server),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env(cwd=str(tmp_path)))
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"hi"}}\n')
        proc.stdin.flush()
        deadline, last, still_since = time.monotonic() + 60, -1, time.monotonic()
        while time.monotonic() - still_since < 2:  # the server could send nothing more for 2 s
            assert time.monotonic() < deadline, f"the server kept sending: {server.sent} bytes"
            rss = rss_mib(proc.pid)
            assert rss < RSS_CAP_MIB, f"the daemon grew to {rss:.0f} MiB with {server.sent} bytes sent"
            if server.sent != last:
                last, still_since = server.sent, time.monotonic()
            time.sleep(0.05)
        assert server.sent < 64 << 20 and rss_mib(proc.pid) < RSS_CAP_MIB
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
