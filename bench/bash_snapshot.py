"""What a ``bash`` tool call costs as the repository grows: 1k, 10k, 50k and 200k committed files.

Each repository (``--sizes``; folders of 100 small files, 20 folders to a package) is built
once and kept in ``~/.cache/pi-daemon-bench/repos``. For each size, interleaved run by run,
the daemon is started in the repository (through :mod:`pi_daemon.client`, against the
loopback model server of ``peers.py``, ``--allow bash``) and sent

* a first prompt whose one command is ``true`` — the daemon's first command in this work
  tree, which reads the tree once (``first``);
* ``--calls`` prompts whose one command appends a line to a committed file (``per call``:
  the median of their prompt-to-settled times, each two model turns and one command, whose
  change the turn diff then shows).

The figure to read is ``per call`` at 200k against 1k (#30's target: at most 1.5x). Peak RSS
is the daemon's at the end. ``--against REV`` measures that revision's daemon too, in the same
runs (``bench/first_token.py``'s checkout), to compare with the code before.

Run: .venv/bin/python bench/bash_snapshot.py [--runs 5] [--calls 10] [--sizes 1000,10000,50000,200000]
     [--against REV]; ``--check`` runs one small size once.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import precompile
from first_token import checkout
from peers import CACHE, Daemon, ModelServer, peak_rss_mb

REPOS = CACHE / "repos"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@b", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
TARGET = "pkg000/mod00/f0.py"


def repository(files: int) -> Path:
    """A git work tree of ``files`` committed files (built once, then kept)."""
    root = REPOS / str(files)
    if (root / ".git" / "bench-ready").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    for n in range(files):
        folder = root / f"pkg{n // 2000:03d}" / f"mod{n // 100 % 20:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.py").write_text(f"value_{n} = {n}\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "files"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)
    (root / ".git" / "info" / "exclude").write_text(".pi/\n")  # the daemon's sessions, removed after each run
    (root / ".git" / "bench-ready").write_text("")
    return root


def one_run(server: ModelServer, env: dict, repo: Path, calls: int) -> dict[str, float]:
    agent = Daemon(env, str(repo), "--allow", "bash")
    try:
        agent.wait_answer(agent.first_request())
        server.script({"call": "bash", "arguments": {"command": "true"}}, {"text": 2})
        first = agent.run("run true")
        times = []
        for n in range(calls):
            server.script({"call": "bash", "arguments": {"command": f"echo 'line {n}' >> {TARGET}"}}, {"text": 2})
            run = agent.run("append a line")
            assert run["answer"] == "xx", run["answer"]
            times.append(run["settled"] - run["sent"])
        peak = peak_rss_mb(agent.proc.pid)
    finally:
        agent.close()
        (repo / TARGET).write_text("value_0 = 0\n")
        shutil.rmtree(repo / ".pi", ignore_errors=True)
    return {"first": first["settled"] - first["sent"], "per call": statistics.median(times), "peak RSS": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--sizes", default="1000,10000,50000,200000")
    parser.add_argument("--against", metavar="REV", help="also measure this git revision's daemon")
    parser.add_argument("--check", action="store_true", help="one small size, once: checks the bench works")
    args = parser.parse_args()
    sizes = [200] if args.check else [int(s) for s in args.sizes.split(",")]
    runs, calls = (1, 2) if args.check else (args.runs, args.calls)
    precompile()
    repos = {size: repository(size) for size in sizes}
    server = ModelServer()
    figures: dict[tuple[str, int], list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pi-bench-") as tmp:
        root = Path(tmp)
        env = Daemon.setup(root, server)
        (root / "home").mkdir()
        envs = {"this tree": {**env, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}}
        if args.against:
            envs[args.against] = {**envs["this tree"], "PYTHONPATH": str(checkout(args.against, root / "against"))}
        try:
            for run in range(runs):
                for size in sizes:
                    for name, tree_env in envs.items():
                        got = one_run(server, tree_env, repos[size], calls)
                        figures.setdefault((name, size), []).append(got)
                        print(f"run {run + 1} {name} {size:>7} files: first {got['first']:.3f} s, "
                              f"per call {got['per call'] * 1000:.1f} ms, peak RSS {got['peak RSS']:.0f} MB",
                              flush=True)
        finally:
            server.close()
            if args.against:
                subprocess.run(["git", "worktree", "remove", "--force", str(root / "against")],
                               cwd=Path(__file__).parent, check=False)
    if args.check:
        print("bash_snapshot --check: the bench ran")
        return
    print(f"\n{'daemon':<12} {'files':>8} {'first':>9} {'per call':>10} {'vs smallest':>12} {'peak RSS':>9}")
    for name in envs:
        smallest = statistics.median(f["per call"] for f in figures[(name, sizes[0])])
        for size in sizes:
            med = {k: statistics.median(f[k] for f in figures[(name, size)]) for k in ("first", "per call", "peak RSS")}
            print(f"{name:<12} {size:>8} {med['first']:>7.3f} s {med['per call'] * 1000:>7.1f} ms "
                  f"{med['per call'] / smallest:>11.2f}x {med['peak RSS']:>6.0f} MB")
    print(f"(medians of {runs} runs of {calls} calls; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
