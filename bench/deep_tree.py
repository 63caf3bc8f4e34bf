"""What a ``bash`` call costs in a workspace holding a folder chain 1,500 deep (#37's target:
it succeeds within 2 s).

Two workspaces, each with a file at the top: one outside git whose chain is there when the
daemon starts, and one git work tree where the run's first command makes the chain itself
(one ``python3`` that makes 1,500 folders and a file at the bottom). The daemon is started in
each (:mod:`peers`' loopback model server, ``--allow bash``) and sent ``--calls`` prompts whose
one command appends a line to the top file: ``first`` is the prompt that made or first met the
chain, ``per call`` the median of the rest (prompt to settled, two model turns and one command).

Run: .venv/bin/python bench/deep_tree.py [--runs 5] [--calls 5] [--depth 1500]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bash_snapshot import GIT_ENV
from common import precompile
from peers import Daemon, ModelServer


def chain(top: Path, depth: int) -> None:
    fd = os.open(top, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        below = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
    os.close(os.open("bottom.txt", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
    os.close(fd)


def workspace(root: Path, depth: int, git: bool) -> str:
    """The workspace, and the first command (in git: the one that makes the chain)."""
    root.mkdir()
    (root / "top.txt").write_text("top\n")
    if not git:
        chain(root, depth)
        return "echo first >> top.txt"
    (root / ".gitignore").write_text("/.pi/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "top"]):
        subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True)
    return (f"python3 -c \"import os\nfor _ in range({depth}): os.mkdir('d'); os.chdir('d')\n"
            "open('bottom.txt', 'w').write('b')\" && echo first >> top.txt")


def one_run(server: ModelServer, env: dict, root: Path, first_command: str, calls: int) -> dict[str, float]:
    agent = Daemon(env, str(root), "--allow", "bash")
    try:
        agent.wait_answer(agent.first_request())
        server.script({"call": "bash", "arguments": {"command": first_command}}, {"text": 2})
        first = agent.run("make the chain")
        times = []
        for n in range(calls):
            server.script({"call": "bash", "arguments": {"command": f"echo 'line {n}' >> top.txt"}}, {"text": 2})
            run = agent.run("append a line")
            assert run["answer"] == "xx", run["answer"]
            times.append(run["settled"] - run["sent"])
    finally:
        agent.close()
    return {"first": first["settled"] - first["sent"], "per call": statistics.median(times)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--depth", type=int, default=1500)
    args = parser.parse_args()
    precompile()
    server = ModelServer()
    figures: dict[str, list[dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pi-bench-", ignore_cleanup_errors=True) as tmp:
        root = Path(tmp)
        env = {**Daemon.setup(root, server), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        (root / "home").mkdir(exist_ok=True)
        try:
            for run in range(args.runs):
                for kind in ("outside git", "git"):
                    place = root / f"{kind.replace(' ', '-')}-{run}"
                    got = one_run(server, env, place, workspace(place, args.depth, kind == "git"), args.calls)
                    figures.setdefault(kind, []).append(got)
                    print(f"run {run + 1} {kind:<12} first {got['first']:.3f} s, per call {got['per call']:.3f} s",
                          flush=True)
        finally:
            server.close()
            subprocess.run(["rm", "-rf", tmp], check=True)  # shutil.rmtree recurses: too deep for it
    print(f"\n{'workspace':<12} {'depth':>6} {'first':>9} {'per call':>9}")
    for kind, got in figures.items():
        print(f"{kind:<12} {args.depth:>6} {statistics.median(f['first'] for f in got):>7.3f} s "
              f"{statistics.median(f['per call'] for f in got):>7.3f} s")
    print(f"(medians of {args.runs} runs of {args.calls} calls; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
