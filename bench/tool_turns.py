"""The daemon's CPU per read-tool turn: the tool loop of ``peers.py`` ("100 read-tool turns"),
measured as the daemon process's own CPU time (``/proc/<pid>/stat``), which a busy machine
disturbs far less than wall time.

Each run spawns the daemon, sends a warm-up prompt, then one prompt that the loopback model
answers with ``--turns`` read-tool calls in a row and a short text; the CPU the daemon spent
between sending that prompt and ``agent_settled``, divided by the turns, is the figure.

``--tree PATH`` (repeatable) measures the daemon from another source tree of the package
(for example ``git worktree`` or ``git archive`` of a base revision), alternating the trees
run by run so machine load hits all alike; ``--py-spy FILE`` (``pip install -e .[profile]``) records the runs of the
first tree with py-spy (raw folded stacks, ``FILE.<run>``) at 1,000 Hz; ``--attach CMD`` runs
another such tool (``{pid}`` and ``{run}`` in it are filled in).

Run: .venv/bin/python bench/tool_turns.py [--turns 1000] [--runs 5] [--tree /tmp/base --tree .]
"""

from __future__ import annotations

import argparse
import compileall
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import precompile
from peers import Bench, Daemon, ModelServer

from pi_daemon.client import daemon_command

PY_SPY = Path(sys.executable).parent / "py-spy"


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(bench: Bench, tree: str | None, turns: int, attach: str | None) -> tuple[float, float]:
    env = dict(bench.env["daemon"])
    if tree:
        env["PYTHONPATH"] = tree
    agent = Daemon(env, str(bench.workspace))
    agent.wait_answer(agent.first_request())
    bench.server.script({"text": 3})
    agent.run("warm up")
    spy = None
    if attach:
        spy = subprocess.Popen(shlex.split(attach.format(pid=agent.proc.pid)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        time.sleep(1)
    bench.server.script({"reads": turns, "path": "notes.txt"}, {"text": 2})
    before = cpu_seconds(agent.proc.pid)
    run = agent.run("read notes.txt again and again")
    cpu = cpu_seconds(agent.proc.pid) - before
    assert len(run["turns"]) == turns + 1 and run["answer"] == "xx", (len(run["turns"]), run["answer"])
    if spy:
        spy.send_signal(2)
        spy.wait()
    agent.close()
    return cpu / turns * 1000, (run["settled"] - run["sent"]) / turns * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--tree", action="append", help="a source tree of pi_daemon to measure (default: this one)")
    parser.add_argument("--py-spy", help="record the first tree's runs with py-spy into FILE.<run>")
    parser.add_argument("--attach", help="a command run on the first tree's runs, e.g. 'strace -c -f -o /tmp/s -p {pid}'")
    args = parser.parse_args()
    precompile()
    trees = args.tree or [None]
    for tree in trees:
        if tree:  # that tree's bytecode, as precompile() writes this one's
            compileall.compile_dir(os.path.join(tree, "pi_daemon"), quiet=1)
    results: dict[str | None, list[tuple[float, float]]] = {t: [] for t in trees}
    server = ModelServer()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            bench = Bench(Path(tmp), server, Path(), Path(), small=False)
            for run in range(args.runs):
                for tree in trees:
                    spy = None
                    if args.py_spy and tree == trees[0]:
                        spy = f"{PY_SPY} record -r 1000 --gil --format raw -o {args.py_spy}.{run + 1} -p {{pid}}"
                    elif args.attach and tree == trees[0]:
                        spy = args.attach.replace("{run}", str(run + 1))
                    results[tree].append(one_run(bench, tree, args.turns, spy))
                    cpu, wall = results[tree][-1]
                    print(f"run {run + 1} {tree or '.'}: {cpu:.3f} ms CPU, {wall:.3f} ms wall per turn", flush=True)
    finally:
        server.close()
    for tree in trees:
        cpus = [c for c, _ in results[tree]]
        walls = [w for _, w in results[tree]]
        print(f"{tree or '.'}: median {statistics.median(cpus):.3f} ms CPU, "
              f"{statistics.median(walls):.3f} ms wall per turn ({args.runs} runs of {args.turns} turns)")


if __name__ == "__main__":
    main()
