"""What a ``bash`` tool call costs with a 12 GiB sparse untracked file in the work tree, against
the same call without it (issue #37: at most 2x).

A repository of ``--files`` committed files (:func:`bash_snapshot.repository`) is copied to a
temporary folder twice, one copy with ``big.bin``, 12 GiB made with ``truncate`` (sparse: no
disk used, but ``git add`` would read and hash all of it). Each run starts the daemon in each
copy (``bash_snapshot.one_run``: a first command, then ``--calls`` commands appending a line
to a committed file) and takes the median per-call time; the figure is the ratio of the
medians over ``--runs`` runs. Before the files too large to diff were left out of the
snapshot, each call of the copy with the big file took about 120 s (git's time limit).

A third copy has a folder git ignores (``build/``, one file in it): the watch does not watch
it, so a write through a hard link there would hide from the watch, and the run's end
compares the tracked files' stat data with the snapshot (``git diff-files``). Its ratio is
what that check costs at ``--files`` (each run here has one command).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from bash_snapshot import one_run, repository
from common import precompile
from peers import Daemon, ModelServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--size-gib", type=int, default=12)
    args = parser.parse_args()
    precompile()
    server = ModelServer()
    figures: dict[str, list[dict[str, float]]] = {"without": [], "with big.bin": [], "with build/": []}
    with tempfile.TemporaryDirectory(prefix="pi-bench-") as tmp:
        root = Path(tmp)
        env = {**Daemon.setup(root, server), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        (root / "home").mkdir(exist_ok=True)
        repos = {}
        for name in figures:
            repos[name] = root / name.replace(" ", "-")
            shutil.copytree(repository(args.files), repos[name], symlinks=True)
        with open(repos["with big.bin"] / "big.bin", "wb") as f:
            f.truncate(args.size_gib << 30)
        (repos["with build/"] / ".gitignore").write_text("build/\n")  # left untracked: ignored as a whole
        (repos["with build/"] / "build").mkdir()
        (repos["with build/"] / "build" / "out.o").write_bytes(b"object\n")
        try:
            for run in range(args.runs):
                for name, repo in repos.items():
                    got = one_run(server, env, repo, args.calls)
                    figures[name].append(got)
                    print(f"run {run + 1} {name:<14} first {got['first']:.3f} s, per call "
                          f"{got['per call'] * 1000:.1f} ms", flush=True)
        finally:
            server.close()
    med = {name: statistics.median(f["per call"] for f in runs) for name, runs in figures.items()}
    first = {name: statistics.median(f["first"] for f in runs) for name, runs in figures.items()}
    for name in figures:
        print(f"{name:<14} first {first[name]:.3f} s  per call {med[name] * 1000:.1f} ms")
    print(f"per call with a {args.size_gib} GiB sparse untracked file: {med['with big.bin'] / med['without']:.2f}x "
          f"the same call without it (target <= 2x); with an ignored folder: "
          f"{med['with build/'] / med['without']:.2f}x; medians of {args.runs} runs of {args.calls} calls, "
          f"{args.files} files, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")


if __name__ == "__main__":
    main()
