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
import tempfile
import time

from common import precompile

from pi_daemon.client import Client
from pi_daemon.events import AgentSettled, MessageUpdate, TextDeltaEvent
from pi_daemon.rpc.types import InitializeParams, PromptParams

def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def start_and_initialize(args: list[str], cwd: str) -> tuple[Client, float]:
    started = time.perf_counter()
    client = Client(*args, cwd=cwd, stderr=subprocess.DEVNULL)
    client.request("initialize", InitializeParams(protocol_version=1))
    return client, time.perf_counter() - started


def one_run(cwd: str, script: str, deltas: int) -> dict[str, float]:
    client, init_s = start_and_initialize(["--faux-script", script, "--model", "faux/bench"], cwd)
    with client:
        client.request("getState")  # everything is loaded once this is answered
        time.sleep(0.3)
        idle = rss_mb(client.proc.pid)
        started = time.perf_counter()
        client.request_future("prompt", PromptParams(text="go"))
        seen = 0
        for params in client.events():
            event = params.event
            if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextDeltaEvent):
                seen += len(event.assistant_message_event.delta)
            if isinstance(event, AgentSettled):
                break
        settled = time.perf_counter() - started
        assert seen == deltas, seen
        return {"init": init_s, "rss": idle, "stream": settled}


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
