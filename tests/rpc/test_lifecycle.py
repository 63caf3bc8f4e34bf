"""EOF, signals, shutdown/exit, $/cancelRequest, backpressure and a vanished client."""

import contextlib
import json
import signal
import subprocess
import time
from typing import Iterator

from client import clean_env, text, write_script
from pi_daemon.client import daemon_command


def slow(tmp_path, n=400, delay_ms=5, replies=None):
    script = write_script(tmp_path / "slow.json", replies or [text("z" * n)], modelId="slow",
                          chunkSize=1, delayMs=delay_ms)
    return ["--faux-script", str(script), "--model", "faux/slow"]


def test_printf_pipe_just_works(tmp_path):
    lines = b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"piped"}}\n'
    out = subprocess.run(daemon_command("--model", "faux/echo"), env=clean_env(), input=lines, capture_output=True,
                         cwd=tmp_path, timeout=20)
    assert out.returncode == 0, out.stderr
    assert b"Traceback" not in out.stderr, out.stderr
    messages = [json.loads(line) for line in out.stdout.splitlines()]
    reply = messages.index({"jsonrpc": "2.0", "id": 1, "result": {"disposition": "started"}})
    # The reply comes once the prompt is delivered and written to the session file.
    before = [m["params"]["event"] for m in messages[:reply]]
    assert [e["type"] for e in before] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert before[3]["message"]["content"] == "piped"
    assert messages[-1]["params"]["event"] == {"type": "agent_settled", "aborted": False}
    answer = "".join(m["params"]["event"]["assistantMessageEvent"].get("delta", "")
                     for m in messages if m.get("params", {}).get("event", {}).get("type") == "message_update"
                     and m["params"]["event"]["assistantMessageEvent"]["type"] == "text_delta")
    assert answer.startswith("You said: piped")


def test_eof_answers_requests_in_flight_and_lets_runs_settle(spawn, tmp_path):
    d = spawn(*slow(tmp_path, n=60))
    d.request_async("prompt", {"text": "go"})
    state = d.request_async("getState")  # before the waitForIdle: one after it would wait for it
    waiting = d.request_async("waitForIdle")
    assert d.close() == 0  # within client.WAIT_S (the run itself takes 0.3 s)
    assert d.responses[waiting]["result"] == {"aborted": False}
    assert d.responses[state]["result"]["isStreaming"] is True
    assert d.event_types()[-1] == "agent_settled"


def test_sigterm_aborts_runs_answers_in_flight_and_exits_zero(spawn, tmp_path):
    d = spawn(*slow(tmp_path, n=5000))
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 5)
    waiting = d.request_async("waitForIdle")
    d.call("listModels")  # answered in order: waitForIdle is being served (a getState would wait for it)
    started = time.monotonic()
    d.proc.send_signal(signal.SIGTERM)
    assert d.proc.wait(10) == 0
    assert time.monotonic() - started < 10  # not the 25 s the run would take
    d._reader.join(5)
    assert d.responses[waiting]["result"] == {"aborted": True}
    assert d.events[-1]["event"] == {"type": "agent_settled", "aborted": True}
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "aborted"


def test_cancel_request_answers_minus_32800_and_the_run_goes_on(spawn, tmp_path):
    d = spawn(*slow(tmp_path, n=300))
    d.call("prompt", {"text": "go"})
    waiting = d.request_async("waitForIdle")
    d.notify("$/cancelRequest", {"id": waiting})  # read after it: it is running by then
    reply = d.wait_response(waiting)
    assert reply["error"]["code"] == -32800
    d.notify("$/cancelRequest", {"id": 12345})  # unknown: ignored
    assert d.call("getState")["isStreaming"] is True
    d.wait_event("agent_settled", timeout=20)
    assert d.response_counts[waiting] == 1


def test_shutdown_then_exit(spawn, tmp_path):
    d = spawn(*slow(tmp_path, n=5000))
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 3)
    assert d.call("shutdown") == {}
    assert d.events[-1]["event"]["type"] in ("agent_settled", "queue_update")
    refused = d.request("getState")["error"]
    assert refused["code"] == -32003 and "shutting down" in refused["message"]
    d.notify("exit")
    assert d.proc.wait(10) == 0


def rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


@contextlib.contextmanager
def streaming(tmp_path, deltas: int, delay_ms: float = 0) -> Iterator[tuple[subprocess.Popen, int]]:
    """A daemon answering a prompt with ``deltas`` one-character deltas (``delay_ms`` apart): ``(process,
    its RSS in KB before the prompt)``, the prompt sent; stopped at the end."""
    script = write_script(tmp_path / "deltas.json", [text("x" * deltas)], modelId="deltas", chunkSize=1,
                          delayMs=delay_ms)
    proc = subprocess.Popen(daemon_command("--faux-script", str(script), "--model", "faux/deltas"), env=clean_env(),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path)
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"getState"}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        baseline = rss_kb(proc.pid)
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"text":"go"}}\n')
        proc.stdin.flush()
        yield proc, baseline
    finally:
        proc.kill()
        proc.wait()


def test_a_client_that_stops_reading_slows_the_agent_not_memory(tmp_path):
    # 400,000 deltas are ~55 MB of notifications; unread, they must not pile up in memory.
    with streaming(tmp_path, 400_000) as (proc, baseline):
        time.sleep(3)  # not reading
        stalled = rss_kb(proc.pid)
        assert stalled - baseline < 30_000, (baseline, stalled)
        # Reading again lets the run finish, with every notification delivered. While the
        # client lagged, adjacent deltas were coalesced: fewer notifications, same text.
        proc.stdin.close()
        seen, last, parts = 0, None, []
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("method") == "agent/event":
                seen += 1
                assert message["params"]["seq"] == seen
                event = message["params"]["event"]
                last = event["type"]
                if last == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
                    parts.append(event["assistantMessageEvent"]["delta"])
        assert last == "agent_settled"
        assert "".join(parts) == "x" * 400_000
        assert len(parts) < 400_000
        assert proc.wait(20) == 0


def test_vanished_client_aborts_the_run_and_exits(tmp_path):
    proc = subprocess.Popen(daemon_command(*slow(tmp_path, n=100_000, delay_ms=1)), env=clean_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"go"}}\n')
    proc.stdin.flush()
    proc.stdout.readline()
    proc.stdout.close()  # the client is gone
    proc.stdin.close()
    assert proc.wait(10) == 0
    assert b"the client is gone" in proc.stderr.read()


def test_vanished_client_is_noticed_while_the_run_is_quiet(tmp_path):
    # A minute before each chunk: nothing is written, yet the daemon notices the client left (the
    # bound below is far from that minute, so a loaded host's slow exit does not fail it).
    proc = subprocess.Popen(daemon_command(*slow(tmp_path, n=3, delay_ms=60_000)), env=clean_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"text":"go"}}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        time.sleep(0.3)
        started = time.monotonic()
        proc.stdout.close()
        proc.stdin.close()
        assert proc.wait(30) == 0
        assert time.monotonic() - started < 30
        assert b"the client is gone" in proc.stderr.read()
    finally:
        proc.kill()
