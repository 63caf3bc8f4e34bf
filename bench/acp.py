"""The ACP face on the faux provider: start-up to the ``initialize`` answer, idle memory, and
a 20,000-delta answer from ``session/prompt`` to its ``stopReason``.

Run: .venv/bin/python bench/acp.py [--runs 7]
Prints the median of the runs for each figure next to its target (the native face's).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from daemon import rss_mb, run_bench

INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}\n'


def send(proc: subprocess.Popen, rid: int, method: str, params: dict) -> None:
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
    proc.stdin.flush()


def answer(proc: subprocess.Popen, rid: int, on_update=None) -> dict:
    while True:
        message = json.loads(proc.stdout.readline())
        if message.get("id") == rid:
            return message
        if on_update is not None and message.get("method") == "session/update":
            on_update(message["params"]["update"])


def one_run(cwd: str, script: str, deltas: int) -> dict[str, float]:
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "pi_daemon", "--acp", "--faux-script", script, "--model",
                             "faux/bench"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd)
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        init_s = time.perf_counter() - started
        send(proc, 2, "session/new", {"cwd": cwd, "mcpServers": []})
        session_id = answer(proc, 2)["result"]["sessionId"]
        time.sleep(0.3)
        idle = rss_mb(proc.pid)
        seen = 0

        def count(update: dict) -> None:
            nonlocal seen
            if update["sessionUpdate"] == "agent_message_chunk":
                seen += len(update["content"]["text"])

        started = time.perf_counter()
        send(proc, 3, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        assert answer(proc, 3, count)["result"]["stopReason"] == "end_turn"
        stream = time.perf_counter() - started
        assert seen == deltas, seen
        return {"init": init_s, "rss": idle, "stream": stream}
    finally:
        proc.stdin.close()
        proc.wait(10)


def main() -> None:
    run_bench(one_run, "idle RSS after session/new", "prompt -> stopReason")


if __name__ == "__main__":
    main()
