"""File-tool cost per call, in process (no model, no daemon around it).

  * ``read`` of a small file at depth 1 and depth 6, 1,000 calls each;
  * ``write`` of a small file, 1,000 calls;
  * ``grep`` over a 200-file tree with 50 matching files.

Each figure is the median over ``--runs`` runs, in microseconds per call. To compare
with another version of the package, run this file with that package first on
PYTHONPATH (e.g. ``git archive <rev> pi_daemon | tar -x -C /tmp/old`` and
``PYTHONPATH=/tmp/old python bench/tools.py``).

Run: .venv/bin/python bench/tools.py [--runs 5] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from pi_daemon.cancel import CancelToken
from pi_daemon.tools.builtin import coding_tools
from pi_daemon.guard.workspace import Workspace


async def _nothing(_partial) -> None:
    pass


async def per_call(tool, args: dict, calls: int) -> float:
    cancel = CancelToken()
    start = time.perf_counter()
    for _ in range(calls):
        result = await tool.execute("bench", args, cancel, _nothing)
        assert not result.is_error, result
    return (time.perf_counter() - start) / calls * 1e6


def setup(root: Path) -> None:
    (root / "small.txt").write_text("hello\nworld\n" * 10)
    deep = root / "a" / "b" / "c" / "d" / "e"
    deep.mkdir(parents=True)
    (deep / "small.txt").write_text("hello\nworld\n" * 10)
    for n in range(200):
        folder = root / "tree" / f"m{n % 20}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{n}.py").write_text("x = 1\n" * 50 + ("needle = 2\n" if n % 4 == 0 else ""))


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=1000)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        setup(root)
        tools = {t.name: t for t in coding_tools(Workspace(str(root)))}
        cases = [("read depth 1", tools["read"], {"path": "small.txt"}, opts.calls),
                 ("read depth 6", tools["read"], {"path": "a/b/c/d/e/small.txt"}, opts.calls),
                 ("write depth 1", tools["write"], {"path": "w.txt", "content": "hello\n" * 20}, opts.calls),
                 ("grep 200 files", tools["grep"], {"pattern": "needle", "path": "tree"}, max(opts.calls // 20, 5))]
        for name, tool, args, calls in cases:
            await per_call(tool, args, min(calls, 50))  # warm up
            runs = [await per_call(tool, args, calls) for _ in range(opts.runs)]
            print(f"{name:<16} {statistics.median(runs):9.1f} us/call  (median of {opts.runs}; "
                  f"min {min(runs):.1f}, max {max(runs):.1f})")


if __name__ == "__main__":
    asyncio.run(main())
