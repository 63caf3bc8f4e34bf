"""Sessions streaming at once in one daemon: per-session throughput of 20 concurrent vs one alone.

One daemon, ``--sessions`` sessions (``session/new`` each), every one prompted at once; the
loopback model server of ``peers.py`` (its own process, answers pre-encoded) streams each a
``--deltas``-delta answer. Per session the figure is the characters of text received by the
client per second, from its prompt sent to its last delta (deltas merged by the daemon's
coalescing count by their characters). Each run starts a fresh daemon, warms every session
with a short answer, then measures; the run alone and the run of N alternate, ``--runs``
times, so machine load hits both alike.

Two streams:

  * ``unpaced``: the server sends the whole answer at once, so the run is as fast as the
    daemon can go. On 2 cores one daemon (one event loop) is then the limit and N sessions
    share it: the figure to read is the daemon's CPU per delta, alone and with N, which
    shows whether a session's cost grows with the number of sessions;
  * paced: the server streams each answer at ``--rates`` deltas a second (each rate a run),
    as a model does (a fast one streams ~100-200 tokens/s): each session should get the
    rate, alone or with N.

Also: the CPU seconds of the daemon, the client (this process, its reader thread included)
and the server over the run, and the daemon's peak RSS (``VmHWM``).

Run: .venv/bin/python bench/scale_sessions.py [--sessions 20] [--deltas 5000] [--rates 500,2000] [--runs 3]
     .venv/bin/python bench/scale_sessions.py --check   (3 sessions, short answers, once)
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import precompile
from peers import Daemon, ModelServer, peak_rss_mb
from tool_turns import cpu_seconds

from pi_daemon.client import Client
from pi_daemon.events import AgentSettled, MessageUpdate, TextDeltaEvent
from pi_daemon.rpc.types import PromptParams, SessionNewParams


def stream_all(client: Client, sessions: list[str], deltas: int) -> dict[str, float]:
    """Prompt every session at once; per session, characters per second from its prompt to its last delta."""
    sent: dict[str, float] = {}
    for sid in sessions:
        client.request_future("prompt", PromptParams(text="a long answer", session_id=sid))
        sent[sid] = time.perf_counter()
    chars = dict.fromkeys(sessions, 0)
    last: dict[str, float] = {}
    settled: set[str] = set()
    for params in client.events():
        event = params.event
        if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextDeltaEvent):
            chars[params.session_id] += len(event.assistant_message_event.delta)
            last[params.session_id] = time.perf_counter()
        elif isinstance(event, AgentSettled):
            settled.add(params.session_id)
            if len(settled) == len(sessions):
                break
    assert all(chars[sid] == deltas for sid in sessions), chars
    return {sid: deltas / (last[sid] - sent[sid]) for sid in sessions}


def one_run(root: Path, server: ModelServer, count: int, deltas: int, rate: int | None) -> dict:
    env = Daemon.setup(root, server)
    workspace = root / "workspace"
    workspace.mkdir()
    with Client("--model", "local/bench", cwd=str(workspace), env=env, stderr=subprocess.DEVNULL) as client:
        sessions = [client.request("session/new", SessionNewParams(name=f"s{n}")).session_id for n in range(count)]
        server.script(*[{"text": 3}] * count)
        stream_all(client, sessions, 3)  # warm: each session's first model request
        server.script(*[{"text": deltas, **({"rate": rate} if rate else {})}] * count)
        cpu = {"daemon": cpu_seconds(client.proc.pid), "server": cpu_seconds(server.proc.pid),
               "client": time.process_time()}
        started = time.perf_counter()
        rates = stream_all(client, sessions, deltas)
        wall = time.perf_counter() - started
        used = {"daemon": cpu_seconds(client.proc.pid) - cpu["daemon"],
                "server": cpu_seconds(server.proc.pid) - cpu["server"],
                "client": time.process_time() - cpu["client"]}
        peak = peak_rss_mb(client.proc.pid)
    return {"rates": list(rates.values()), "wall": wall, "cpu": used, "peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--rates", default="500,2000", help="deltas/s of each paced answer, one run each")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="3 sessions, 200-delta answers, once")
    args = parser.parse_args()
    precompile()
    count, deltas, runs = (3, 200, 1) if args.check else (args.sessions, args.deltas, args.runs)
    modes: dict[str, int | None] = {"unpaced": None}
    modes.update({f"{rate}/s": rate for rate in map(int, args.rates.split(","))})
    results: dict[tuple[str, int], list[dict]] = {(m, n): [] for m in modes for n in (1, count)}
    server = ModelServer()
    try:
        for _ in range(runs):
            for mode, rate in modes.items():
                for n in (1, count):  # alone and together, alternating
                    with tempfile.TemporaryDirectory(prefix="pi-bench-sessions-") as tmp:
                        results[mode, n].append(one_run(Path(tmp), server, n, deltas, rate))
    finally:
        server.close()
    if args.check:
        print(f"scale_sessions --check: {count} sessions streamed {deltas} deltas each, unpaced and paced")
        return
    print(f"{'stream':<9} {'sessions':>8} {'per session':>12} {'vs alone':>8} {'min':>9} {'all':>9} "
          f"{'daemon CPU/delta':>16} {'CPU s daemon/client/server':>27} {'peak RSS':>9}")
    for mode in modes:
        alone = statistics.median(r for run in results[mode, 1] for r in run["rates"])
        for n in (1, count):
            runs_ = results[mode, n]
            per = statistics.median(r for run in runs_ for r in run["rates"])
            low = statistics.median(min(run["rates"]) for run in runs_)
            total = statistics.median(sum(run["rates"]) for run in runs_)
            cpu = {k: statistics.median(run["cpu"][k] for run in runs_) for k in ("daemon", "client", "server")}
            per_delta = cpu["daemon"] / (n * deltas) * 1e6
            peak = statistics.median(run["peak"] for run in runs_)
            print(f"{mode:<9} {n:>8} {per:>8.0f} d/s {per / alone:>7.2f}x {low:>5.0f} d/s {total:>5.0f} d/s "
                  f"{per_delta:>13.1f} us {cpu['daemon']:>9.2f} / {cpu['client']:.2f} / {cpu['server']:.2f} "
                  f"{peak:>7.1f}MB")
    print(f"(medians of {runs} runs; per session: its deltas / (prompt sent -> its last delta); min: the slowest "
          f"session; all: the sessions' sum; {deltas:,} deltas each, unpaced or paced at N/s; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
