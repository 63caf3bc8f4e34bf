"""Sessions at the scale a user reaches: long sessions and many of them (issue #30).

  * ``session/load`` of a stored 10,000-entry (~8 MB) and 100,000-entry (~230 MB) session,
    against Pi 1.6.0's ``switch_session`` in the same run (Pi driven by :mod:`peers`, the two
    agents interleaved), with each agent's peak RSS once the session is loaded. The daemon
    twice: the first load of the file (no index beside it: read whole, the index written), and
    a load with its index (what reopening a session costs);
  * the conversation shown: ``session/load{replay}`` up to ``replay_end`` (the daemon, with its
    index), ``switch_session`` then ``get_messages`` (Pi);
  * ``session/list`` and ``session/search`` over 1,000 sessions in one workspace (the daemon
    only: Pi's RPC mode has neither), with the daemon's peak RSS.

Each figure is the median of ``--runs``; every load is in a fresh agent (what a user waits for
when the editor opens a stored session), the list and search in one daemon after a first,
unmeasured call. ``--tree DIR`` (repeatable; a source tree such as ``git archive <rev> | tar -x
-C DIR``) shows the conversation with that tree's daemon too, in the same rounds, each tree in
a workspace of its own (its index is its version's); the order of the agents in a round is
shuffled, and each tree's ratio is also given as the median of its ratios to Pi round by round.

Run: .venv/bin/python bench/session_scale.py [--runs 5] [--only daemon|pi] [--skip-100k] [--tree DIR]
     .venv/bin/python bench/session_scale.py --check   (small and quick: checks it works, not its speed)
"""

from __future__ import annotations

import argparse
import compileall
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import precompile
from peers import Agent, Bench, Lines, ModelServer, install_pi, peak_rss_mb, write_session
from sessions import start, write_session as write_small

from pi_daemon.client import daemon_command
from pi_daemon.rpc.types import SessionListParams, SessionSearchParams
from pi_daemon.session.load_index import index_path


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


def shown(bench: Bench, which: str, session: Path, tree: Path | None = None) -> tuple[float, float]:
    """Seconds from asking for the stored session to having its whole conversation, and the
    agent's peak RSS then (MB). Both agents' output is read as raw lines here, neither decoded:
    decoding would measure this script (the daemon's replay is 2 events a message, Pi's answer
    one line of all the messages, 230 MB at 100,000 entries)."""
    if which == "daemon":
        env, workspace = bench.env["daemon"], bench.workspace
        if tree is not None:
            env, workspace = {**env, "PYTHONPATH": str(tree)}, tree_workspace(bench, tree)
        agent: Agent = Lines(daemon_command("--model", "local/bench"), env, str(workspace))
        agent.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        while b'"id":1' not in agent.readline():
            pass
        target = workspace / ".pi" / "sessions" / session.name
        started = time.perf_counter()
        agent.send({"jsonrpc": "2.0", "id": 2, "method": "session/load",
                    "params": {"file": str(target), "replay": True}})
        while b'"replay_end"' not in agent.readline():
            pass
    else:
        agent = bench.spawn(which)
        agent.wait_answer(agent.first_request())
        started = time.perf_counter()
        agent.load(session, bench.workspace)
        answer = f'"id":"{agent.request({"type": "get_messages"})}"'.encode()
        while answer not in (line := agent.readline()):
            pass
        assert b'"success":true' in line and b'"messages":[{' in line, line[:300]
    elapsed = time.perf_counter() - started
    peak = peak_rss_mb(agent.proc.pid)
    agent.close()
    return elapsed, peak


def tree_workspace(bench: Bench, tree: Path) -> Path:
    return bench.root / f"workspace-{tree.name}-{abs(hash(str(tree))) % 10_000}"


def copy_for_trees(bench: Bench, session: Path, trees: list[Path]) -> None:
    """Each tree's copy of the session, its index written by a first, unmeasured replay."""
    for tree in trees:
        sessions = tree_workspace(bench, tree) / ".pi" / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        for old in sessions.iterdir():
            old.unlink()
        shutil.copy(session, sessions / session.name)
        shown(bench, "daemon", session, tree)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--check", action="store_true", help="each workload once, small; checks it works")
    parser.add_argument("--only", choices=["daemon", "pi"], help="load with one agent only (for profiling)")
    parser.add_argument("--skip-100k", action="store_true", help="leave out the 100,000-entry session")
    parser.add_argument("--tree", type=Path, action="append", default=[],
                        help="also show the conversation with this source tree's daemon, in the same rounds")
    args = parser.parse_args()
    precompile()
    trees = [tree.resolve() for tree in args.tree]
    for tree in trees:
        compileall.compile_dir(str(tree / "pi_daemon"), quiet=1)
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
                index = index_path(bench.workspace / ".pi" / "sessions" / session.name)
                copy_for_trees(bench, session, trees)
                for _ in range(runs):
                    for tree in trees:
                        loads.setdefault((str(tree), entries), {"shown": [], "shown rss": []})
                    order = agents + trees
                    random.shuffle(order)  # so that no agent always follows the same one
                    for which in order:  # interleaved, so all see the same machine load
                        if isinstance(which, Path):
                            seconds, peak = shown(bench, "daemon", session, which)
                            loads[(str(which), entries)]["shown"].append(seconds)
                            loads[(str(which), entries)]["shown rss"].append(peak)
                            continue
                        kinds = ["first", "indexed"] if which == "daemon" else [""]
                        for kind in kinds:
                            if kind == "first":
                                index.unlink(missing_ok=True)
                            result = bench.session_load(which, session)
                            row = loads.setdefault((which + kind, entries), {"s": [], "rss": [], "shown": []})
                            row["s"].append(result["session load"])
                            row["rss"].append(result["peak RSS, loaded"])
                        seconds, peak = shown(bench, which, session)
                        row["shown"].append(seconds)
                        row.setdefault("shown rss", []).append(peak)
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

    def line(label: str, row: dict | None, pi: dict | None, key: str) -> None:
        mine = med(row[key]) if row else float("nan")
        theirs = med(pi[key]) if pi else float("nan")
        rss = [f"{med(r['rss' if key == 's' else 'shown rss']):>8.0f} MB" if r else f"{'':>11}" for r in (row, pi)]
        print(f"{label:<62} {mine:>9.3f}s {theirs:>9.3f}s {mine / theirs:>5.2f}x {rss[0]:>11} {rss[1]:>11}")

    print(f"{'what':<62} {'pi-daemon':>10} {'Pi 1.6.0':>10} {'ratio':>6} {'RSS daemon':>11} {'RSS Pi':>8}")
    for entries, _ in sizes:
        pi = loads.get(("pi", entries))
        for kind, label in (("first", "first load, no index"), ("indexed", "with its index")):
            row = loads.get(("daemon" + kind, entries))
            line(f"session/load, {entries:,} entries ({megabytes[entries]:.0f} MB), {label}", row, pi, "s")
        line(f"  conversation shown (replay / get_messages), {entries:,}", loads.get(("daemonindexed", entries)),
             pi, "shown")
        for tree in [Path("."), *trees] if trees and pi else []:
            row = loads.get(("daemonindexed", entries)) if tree == Path(".") else loads[(str(tree), entries)]
            if row is None:
                continue
            if tree != Path("."):
                line(f"  ... shown by {tree}", row, pi, "shown")
            rounds = [mine / theirs for mine, theirs in zip(row["shown"], pi["shown"])]
            print(f"{'':<4}{'this tree' if tree == Path('.') else tree}: median of the ratios round by round "
                  f"{med(rounds):.2f}x")
    for what in ("list", "search"):
        label = f"session/{what}, {many:,} sessions"
        print(f"{label:<62} {med(listing[what]):>9.3f}s {'-':>10} {'':>6} {listing['rss'][0]:>8.0f} MB")
    print(f"(medians of {runs} runs; loads in fresh agents, interleaved; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
