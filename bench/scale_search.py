"""``grep`` and ``find`` tool calls in git repositories of 1,000 / 10,000 / 200,000 committed files.

Each repository is built once and kept in ``$PI_DAEMON_BENCH_CACHE`` (default
``~/.cache/pi-daemon-bench``): folders x subfolders x small files, all committed, plus a
``node_modules/`` of a quarter as many files that ``.gitignore`` leaves out (the tools must
not read it). Every file holds the word ``EVERYWHERE``; one file, the last written, holds
``NEEDLE``; ``*.rare`` names one file.

The daemon runs as an editor runs it (stdio, ``--faux-script`` scripting the tool calls);
each figure is the time from ``tool_execution_start`` to ``tool_execution_end`` as the
client sees it, median of ``--runs`` calls in one daemon per size:

  * grep EVERYWHERE: every file matches (the tool stops at its limit of 200 lines);
  * grep NEEDLE: one match, the whole repository read;
  * find **/*.py: every file matches (the tool stops at its limit of 500 paths);
  * find **/*.rare: one path, the whole tree walked;
  * both "every file" calls again with a limit of 1,000,000 (what is shown is held to 50 KB).

While the calls run, another thread asks ``getState`` again and again: the slowest answer
("stall") is how long the tool held the daemon's event loop, which every other session
shares (``--no-probe`` leaves it out: the call's time alone). Peak RSS is the daemon's (``VmHWM``), over all its calls.

Run: .venv/bin/python bench/scale_search.py [--sizes 1000,10000,200000] [--runs 5]
     .venv/bin/python bench/scale_search.py --check   (one small repository, one call each)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from common import precompile
from peers import CACHE, peak_rss_mb

from pi_daemon.client import Client
from pi_daemon.events import AgentSettled, ToolExecutionEnd, ToolExecutionStart
from pi_daemon.rpc.types import PromptParams

CALLS = [  # (label, tool, arguments, what the result must hold)
    ("grep, matches in every file", "grep", {"pattern": "EVERYWHERE"}, "EVERYWHERE"),
    ("grep, one match (whole tree read)", "grep", {"pattern": "NEEDLE"}, "NEEDLE"),
    ("find **/*.py, every file", "find", {"pattern": "**/*.py"}, "file000.py"),
    ("find **/*.rare, one path (whole tree walked)", "find", {"pattern": "**/*.rare"}, "only.rare"),
    ("grep every file, limit 1,000,000", "grep", {"pattern": "EVERYWHERE", "limit": 1_000_000}, "EVERYWHERE"),
    ("find **/*.py, limit 1,000,000", "find", {"pattern": "**/*.py", "limit": 1_000_000}, "file000.py"),
]
SHAPES = {200: (2, 10, 10), 1000: (10, 10, 10), 10_000: (10, 10, 100), 200_000: (100, 20, 100)}


def source(n: int) -> str:
    return f"def function_{n}(value):\n    # EVERYWHERE: a line every file has\n    return value + {n}\n"


def build_repo(files: int) -> Path:
    """The repository of ``files`` committed files (built once, then reused from the cache)."""
    repo = CACHE / f"search-repo-{files}"
    if (repo / ".built").exists():
        return repo
    if repo.exists():
        shutil.rmtree(repo)
    folders, subs, each = SHAPES[files]
    started = time.perf_counter()
    for f in range(folders):
        for s in range(subs):
            folder = repo / f"pkg{f:03d}" / f"mod{s:02d}"
            folder.mkdir(parents=True)
            for n in range(each):
                (folder / f"file{n:03d}.py").write_text(source(n))
    (folder / "only.rare").write_text("the one rare file\n")
    (folder / f"file{each - 1:03d}.py").write_text(source(each - 1) + "# NEEDLE\n")
    vendored = repo / "node_modules"
    for n in range(files // 4):
        package = vendored / f"package{n // 100:04d}"
        package.mkdir(parents=True, exist_ok=True)
        (package / f"index{n % 100:02d}.py").write_text(source(n) + "# NEEDLE in an ignored file\n")
    (repo / ".gitignore").write_text("node_modules/\n.pi/\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "bench repository"], cwd=repo, check=True)
    (repo / ".built").write_text("")
    print(f"built {repo} ({files:,} files) in {time.perf_counter() - started:.0f} s", flush=True)
    return repo


def script(path: Path, runs: int) -> None:
    """The faux model's replies: each call of ``CALLS`` ``runs`` times, one prompt each."""
    replies = []
    for _ in range(runs):
        for n, (_, tool, args, _) in enumerate(CALLS):
            replies.append({"content": [{"type": "toolCall", "id": f"call_{n}", "name": tool, "arguments": args}],
                            "stopReason": "toolUse"})
            replies.append({"content": [{"type": "text", "text": "ok"}]})
    # a window no result fills: the old unbounded results started a compaction, which took a reply
    path.write_text(json.dumps({"modelId": "bench", "contextWindow": 1_000_000_000, "replies": replies}))


class Prober(threading.Thread):
    """Asks ``getState`` again and again: (sent, answered) pairs, to find the event loop's stalls."""

    def __init__(self, client: Client) -> None:
        super().__init__(daemon=True)
        self.client, self.answers, self.stopping = client, [], threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            sent = time.perf_counter()
            self.client.request("getState")
            self.answers.append((sent, time.perf_counter()))
            time.sleep(0.005)

    def worst(self, start: float, end: float) -> float:
        """The slowest answer to a request sent or answered between ``start`` and ``end``."""
        return max((b - a for a, b in self.answers if a <= end and b >= start), default=float("nan"))


def measure(repo: Path, runs: int, probe: bool) -> tuple[dict[str, list[tuple[float, float]]], float]:
    """Per call of ``CALLS``: (seconds, worst getState answer) of each run; and the daemon's peak RSS."""
    shutil.rmtree(repo / ".pi", ignore_errors=True)
    figures: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in CALLS}
    with tempfile.TemporaryDirectory(prefix="pi-bench-search-") as tmp:
        faux = Path(tmp) / "script.json"
        script(faux, runs)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(PI_DAEMON_HOME=str(Path(tmp) / "home"), HOME=str(Path(tmp) / "home"))
        with Client("--faux-script", str(faux), "--model", "faux/bench", cwd=str(repo), env=env,
                    stderr=subprocess.DEVNULL) as client:
            client.request("getState")
            prober = Prober(client)
            if probe:
                prober.start()
            for _ in range(runs):
                for label, tool, _, expect in CALLS:
                    client.request("session/new")  # each call in a fresh conversation, as the first of a task
                    client.request("prompt", PromptParams(text=f"run {tool}"))
                    start = end = 0.0
                    text = ""
                    for params in client.events():
                        event = params.event
                        if isinstance(event, ToolExecutionStart):
                            start = time.perf_counter()
                        elif isinstance(event, ToolExecutionEnd):
                            end = time.perf_counter()
                            text = event.result.content[0].text
                            assert not event.is_error, text
                        elif isinstance(event, AgentSettled):
                            break
                    assert expect in text and "node_modules" not in text, f"{label}: {text[:300]}"
                    time.sleep(0.05)  # let the prober answer once after the call
                    figures[label].append((end - start, prober.worst(start, end)))
            prober.stopping.set()
            if probe:
                prober.join()
            peak = peak_rss_mb(client.proc.pid)
    shutil.rmtree(repo / ".pi", ignore_errors=True)
    return figures, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000,200000", help="committed files per repository")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-probe", action="store_true",
                        help="no getState prober (the tool's own time, without a second client competing)")
    parser.add_argument("--check", action="store_true", help="one 200-file repository, one call each")
    args = parser.parse_args()
    precompile()
    sizes = [200] if args.check else [int(s) for s in args.sizes.split(",")]
    runs = 1 if args.check else args.runs
    repos = {size: build_repo(size) for size in sizes}
    results = {size: measure(repos[size], runs, not args.no_probe) for size in sizes}
    if args.check:
        print(f"scale_search --check: {len(CALLS)} tool calls answered in a {sizes[0]}-file repository")
        return
    base = sizes[0]
    print(f"{'tool call':<46} {'files':>8} {'median':>9} {'ratio':>7} {'stall':>8} {'peak RSS':>9}")
    for label, *_ in CALLS:
        first = statistics.median(t for t, _ in results[base][0][label])
        for size in sizes:
            figures, peak = results[size]
            med = statistics.median(t for t, _ in figures[label])
            stall = statistics.median(s for _, s in figures[label])
            print(f"{label:<46} {size:>8,} {med * 1000:>7.1f}ms {med / first:>6.2f}x {stall * 1000:>6.1f}ms "
                  f"{peak:>7.1f}MB")
    print(f"(medians of {runs} calls; ratio against {base:,} files; stall: the slowest getState answer during "
          f"the call; peak RSS of the daemon over all its calls; {os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
