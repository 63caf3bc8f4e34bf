"""A pipeline as a script author writes it, on one connection: every request written at once,
stdin closed, the answers read (``printf … | pi-daemon``). Requests about a session keep their
order around ``waitForIdle`` (pi_daemon/rpc/ordering.py; protocol.md "Order of requests")."""

import json
import subprocess
import sys

from client import clean_env, text, write_script


def pipe(workspace, requests, script):
    """Run the daemon with ``requests`` on stdin (then EOF): its messages, in order."""
    frames = "".join(json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params}) + "\n"
                     for n, (method, params) in enumerate(requests, 1))
    out = subprocess.run([sys.executable, "-m", "pi_daemon", "--model", "faux/pipe"], cwd=workspace, input=frames,
                         env=clean_env(cwd=str(workspace), PI_DAEMON_FAUX_SCRIPT=str(script)), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    return [json.loads(line) for line in out.stdout.splitlines()]


def replies(messages):
    return [m for m in messages if "id" in m and "method" not in m]


def answers(messages):
    return [m["params"]["event"]["message"]["content"][0]["text"] for m in messages
            if m.get("method") == "agent/event" and m["params"]["event"]["type"] == "message_end"
            and m["params"]["event"]["message"]["role"] == "assistant"]


def slow_script(tmp_path, *texts):
    # each answer streams for a while (chunks of 4 characters, 20 ms apart): the next request is long there
    return write_script(tmp_path.parent / f"{tmp_path.name}-pipe.json", [text(t) for t in texts], modelId="pipe",
                        delayMs=20, chunkSize=4)


def test_prompt_wait_prompt_wait_runs_both_prompts_in_order(tmp_path):
    script = slow_script(tmp_path, "the first answer, told slowly", "the second answer, told slowly")
    messages = pipe(tmp_path, [("prompt", {"text": "one"}), ("waitForIdle", {}),
                               ("prompt", {"text": "two"}), ("waitForIdle", {})], script)
    got = replies(messages)
    assert [r["id"] for r in got] == [1, 2, 3, 4], got  # each answered, in the order asked
    assert all("result" in r for r in got), got
    assert got[0]["result"]["disposition"] == "started" and got[2]["result"]["disposition"] == "started"
    assert got[1]["result"] == {"aborted": False} and got[3]["result"] == {"aborted": False}
    assert answers(messages) == ["the first answer, told slowly", "the second answer, told slowly"]


def test_prompt_wait_close_keeps_the_answer(tmp_path):
    script = slow_script(tmp_path, "an answer worth keeping")
    messages = pipe(tmp_path, [("prompt", {"text": "one"}), ("waitForIdle", {}), ("session/close", {})], script)
    got = replies(messages)
    assert [r["id"] for r in got] == [1, 2, 3] and all("result" in r for r in got), got
    assert got[1]["result"] == {"aborted": False} and got[2]["result"] == {"closed": True}
    assert answers(messages) == ["an answer worth keeping"]
    settled = [m["params"]["event"] for m in messages if m.get("method") == "agent/event"
               and m["params"]["event"]["type"] == "agent_settled"]
    assert settled == [{"type": "agent_settled", "aborted": False}]
    stored = next((tmp_path / ".pi" / "sessions").glob("*.jsonl")).read_text()
    assert "an answer worth keeping" in stored


def test_abort_and_requests_about_no_session_still_overtake_a_wait(tmp_path):
    """An editor's use: a waitForIdle in flight holds back neither abort nor a request about no session."""
    script = slow_script(tmp_path, "a very long answer that is never finished " * 20)
    messages = pipe(tmp_path, [("prompt", {"text": "one"}), ("waitForIdle", {}), ("abort", {}),
                               ("listModels", {})], script)
    got = {r["id"]: r for r in replies(messages)}
    assert got[2]["result"] == {"aborted": True} and got[3]["result"]["aborted"] is True
    order = [r["id"] for r in replies(messages)]
    assert order.index(4) < order.index(2), order  # listModels did not wait for the run
