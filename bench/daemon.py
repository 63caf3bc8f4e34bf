"""Daemon performance on the faux provider: start-up, idle memory, a 20,000-delta answer.

Run: .venv/bin/python bench/daemon.py [--runs 7]
Prints the median of the runs for each figure next to its target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from common import precompile

DAEMON = [sys.executable, "-m", "pi_daemon"]
INIT = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_and_initialize(args: list[str], cwd: str) -> tuple[subprocess.Popen, float]:
    started = time.perf_counter()
    proc = subprocess.Popen(DAEMON + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd)
    proc.stdin.write(INIT)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    assert json.loads(line)["id"] == 1, line
    return proc, elapsed


def request(proc: subprocess.Popen, rid: int, method: str, params: dict | None = None) -> None:
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode() + b"\n")
    proc.stdin.flush()


def one_run(cwd: str, script: str, deltas: int) -> dict[str, float]:
    proc, init_s = start_and_initialize(["--faux-script", script, "--model", "faux/bench"], cwd)
    try:
        request(proc, 2, "getState")  # everything is loaded once this is answered
        while json.loads(proc.stdout.readline()).get("id") != 2:
            pass
        time.sleep(0.3)
        idle = rss_mb(proc.pid)
        started = time.perf_counter()
        request(proc, 3, "prompt", {"text": "go"})
        seen = 0
        while True:
            message = json.loads(proc.stdout.readline())
            event = message.get("params", {}).get("event")
            if event is None:
                continue
            if event["type"] == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta":
                seen += len(event["assistantMessageEvent"]["delta"])
            if event["type"] == "agent_settled":
                break
        settled = time.perf_counter() - started
        assert seen == deltas, seen
        return {"init": init_s, "rss": idle, "stream": settled}
    finally:
        proc.stdin.close()
        proc.wait(10)


def run_bench(one_run, rss_label: str, stream_label: str) -> None:
    """Runs ``one_run(cwd, script, deltas)`` as often as asked and prints each figure's median
    next to its target; the ACP bench shares it with different labels."""
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--deltas", type=int, default=20_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd:
        script = os.path.join(cwd, "bench.json")
        with open(script, "w") as f:
            json.dump({"modelId": "bench", "chunkSize": 1,
                       "replies": [{"content": [{"type": "text", "text": "x" * args.deltas}]}] * args.runs}, f)
        runs = [one_run(cwd, script, args.deltas) for _ in range(args.runs)]
    rows = [
        ("spawn -> initialize response", "init", "s", 0.30),
        (rss_label, "rss", "MB", 60.0),
        (f"{args.deltas:,}-delta answer, {stream_label}", "stream", "s", 0.35),
    ]
    print(f"{'measure':<48} {'median':>8} {'min':>8} {'max':>8} {'target':>8}  ok")
    for label, key, unit, target in rows:
        values = [r[key] for r in runs]
        med = statistics.median(values)
        print(f"{label:<48} {med:>7.3f}{unit[0]} {min(values):>7.3f}{unit[0]} {max(values):>7.3f}{unit[0]} "
              f"{target:>7.2f}{unit[0]}  {'yes' if med <= target else 'NO'}")
    print(f"(median of {args.runs} runs; unit s = seconds, M = MB)")


def main() -> None:
    run_bench(one_run, "idle RSS after initialize", "prompt -> agent_settled")


if __name__ == "__main__":
    main()
