"""Sessions at the scale a user reaches: long sessions and many of them (issue #30).

  * ``session/load`` of a stored 10,000-entry (~8 MB) and 100,000-entry (~200 MB) session,
    against Pi 1.6.0's ``switch_session`` in the same run (Pi driven by :mod:`peers`, the two
    agents interleaved), with each agent's peak RSS once the session is loaded;
  * ``session/list`` and ``session/search`` over 1,000 sessions in one workspace (the daemon
    only: Pi's RPC mode has neither), with the daemon's peak RSS.

Each figure is the median of ``--runs``; every load is in a fresh agent (what a user waits for
when the editor opens a stored session), the list and search in one daemon after a first,
unmeasured call.

Run: .venv/bin/python bench/session_scale.py [--runs 5] [--only daemon|pi] [--skip-100k]
     .venv/bin/python bench/session_scale.py --check   (small and quick: checks it works, not its speed)
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from common import precompile
from peers import Bench, ModelServer, install_pi, peak_rss_mb, write_session
from sessions import start, write_session as write_small

from pi_daemon.rpc.types import SessionListParams, SessionSearchParams


def many_sessions(workspace: Path, count: int) -> None:
    """``count`` sessions of 40 entries, as :mod:`sessions` writes them (one says "needle")."""
    folder = workspace / ".pi" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(count):
        write_small(folder, f"s{n:04d}", 40, 400, str(workspace))
    last = sorted(folder.glob("*_s0000.jsonl"))[0]
    last.write_text(last.read_text().replace("question 2:", "question 2: the needle", 1))


def list_and_search(workspace: Path, count: int, runs: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"list": [], "search": []}
    with start(str(workspace)) as pi:
        pi.request("listModels")
        for method, params in (("session/list", SessionListParams()),
                               ("session/search", SessionSearchParams(query="needle"))):
            pi.request(method, params)  # first, unmeasured: the file cache warm for every run
            for _ in range(runs):
                started = time.perf_counter()
                result = pi.request(method, params)
                figures[method.split("/")[1]].append(time.perf_counter() - started)
                if method == "session/list":
                    assert len(result.sessions) == count, len(result.sessions)
                else:
                    assert [m.session_id for m in result.matches] == ["s0000"], result.matches
        figures["rss"] = [peak_rss_mb(pi.proc.pid)]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="each workload once, small; checks it works")
    parser.add_argument("--only", choices=["daemon", "pi"], help="load with one agent only (for profiling)")
    parser.add_argument("--skip-100k", action="store_true", help="leave out the 100,000-entry session")
    args = parser.parse_args()
    precompile()
    node, cli = install_pi()
    runs = 1 if args.check else args.runs
    agents = [args.only] if args.only else ["daemon", "pi"]
    sizes = [(20, 1000), (200, 4000)] if args.check else [(10_000, 1000)] + ([] if args.skip_100k else
                                                                             [(100_000, 4000)])
    many = 20 if args.check else 1000
    loads: dict[tuple[str, int], dict[str, list[float]]] = {}
    megabytes: dict[int, float] = {}
    server = ModelServer()
    try:
        with tempfile.TemporaryDirectory(prefix="pi-scale-") as tmp:
            bench = Bench(Path(tmp), server, node, cli, args.check)
            for entries, answer in sizes:
                session = Path(tmp) / f"2026-01-0{len(megabytes) + 1}T00-00-00-000Z_" \
                                      f"0194c0de-0000-7000-8000-000000000001.jsonl"
                write_session(session, entries, bench.workspace, answer)
                megabytes[entries] = session.stat().st_size / 1e6
                for _ in range(runs):
                    for which in agents:  # interleaved, so both see the same machine load
                        result = bench.session_load(which, session)
                        row = loads.setdefault((which, entries), {"s": [], "rss": []})
                        row["s"].append(result["session load"])
                        row["rss"].append(result["peak RSS, loaded"])
                session.unlink()
                for copy in (bench.workspace / ".pi" / "sessions").glob("*.jsonl"):
                    copy.unlink()  # the daemon's copy: the next size has the same id
            many_sessions(bench.workspace, many)
            listing = list_and_search(bench.workspace, many, runs)
    finally:
        server.close()
    if args.check:
        print(f"session_scale --check: loads, list and search of {many} sessions ran")
        return
    med = statistics.median
    print(f"{'what':<46} {'pi-daemon':>10} {'Pi 1.6.0':>10} {'ratio':>6} {'RSS daemon':>11} {'RSS Pi':>8}")
    for entries, _ in sizes:
        cells = {a: loads.get((a, entries)) for a in ("daemon", "pi")}
        secs = {a: med(c["s"]) for a, c in cells.items() if c}
        rss = {a: med(c["rss"]) for a, c in cells.items() if c}
        ratio = secs["daemon"] / secs["pi"] if len(secs) == 2 else float("nan")
        label = f"session/load, {entries:,} entries ({megabytes[entries]:.0f} MB)"
        print(f"{label:<46} {secs.get('daemon', float('nan')):>9.3f}s {secs.get('pi', float('nan')):>9.3f}s "
              f"{ratio:>5.2f}x {rss.get('daemon', float('nan')):>8.0f} MB {rss.get('pi', float('nan')):>5.0f} MB")
    for what in ("list", "search"):
        label = f"session/{what}, {many:,} sessions"
        print(f"{label:<46} {med(listing[what]):>9.3f}s {'-':>10} {'':>6} {listing['rss'][0]:>8.0f} MB")
    print(f"(medians of {runs} runs; loads in fresh agents, interleaved; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
