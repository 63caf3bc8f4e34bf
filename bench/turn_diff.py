"""Cost of one ``turn_diff`` event for a run that has touched 200 files of 2,000 lines.

In process, through the session's change log (:mod:`pi_daemon.session.changes`) the way a
run drives it: ``write``/``edit`` record each file at the file-access seam (its contents
stored as blobs, its diff computed and cached until the file is touched again), and after
a tool batch the event is built — the ``turn_changes`` entry appended to a real session
file, the files listed, and the event encoded as the daemon sends it.

  * ``first``: the batch that touched all 200 files at once;
  * ``per event``: each later batch edits ``--touch`` of the 200 files (default 3),
    and the event lists all 200 again.

With ``--bash`` the files are changed on disk behind the tools' back, as a command would,
in a git work tree (the 200 files committed first): the run snapshots the worktree before
its first command, and at the command's end (``tool_execution_end``) the scan finds what
changed, stores it and diffs it.

A file the tools write is stored and diffed when it is written (``ChangeLog.record``, in
the tool's own time), and a command's changes by the scan at its end, so the event only
gathers; that cost is shown too, per batch, as ``recording`` or ``scan``.

Each figure is the median over ``--runs`` runs (the first event) or all their later events,
in milliseconds: wall-clock and CPU time of the process and its git children (the one to
read on a shared, loaded machine).

Run: .venv/bin/python bench/turn_diff.py [--bash] [--files 200] [--lines 2000] [--touch 3] [--events 30] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pi_daemon.converter import from_wire, to_wire
from pi_daemon.events import ChangedFile, TurnDiff
from pi_daemon.wire.framing import dumps
from pi_daemon.session.changes import ChangeLog
from pi_daemon.session.store import SessionStore
from pi_daemon.guard.workspace import Workspace


def content(n: int, lines: int) -> bytes:
    return "".join(f"    value_{n}_{k} = compute({k}, 'a line of ordinary source text')\n"
                   for k in range(lines)).encode()


def edited(data: bytes, rng: random.Random) -> bytes:
    lines = data.splitlines(keepends=True)
    for _ in range(3):  # three hunks
        k = rng.randrange(len(lines))
        lines[k] = lines[k].replace(b"compute", b"recompute")
    return b"".join(lines)


def cpu_now() -> float:
    """CPU seconds of this process and of the children it has waited for (git)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def event(log: ChangeLog) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one event."""
    start, cpu = time.perf_counter(), cpu_now()
    files = log.turn_diff() or []
    event = to_wire(TurnDiff(run_id=log.run_id or "", files=from_wire(files, list[ChangedFile])))
    dumps({"jsonrpc": "2.0", "method": "agent/event", "params": {"sessionId": "bench", "seq": 1, "event": event}})
    return (time.perf_counter() - start) * 1000, (cpu_now() - cpu) * 1000


class Clock:
    """Wall and CPU milliseconds of what runs inside ``with`` blocks, added up."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def __enter__(self) -> None:
        self._start = time.perf_counter(), cpu_now()

    def __exit__(self, *exc: object) -> None:
        self.wall += (time.perf_counter() - self._start[0]) * 1000
        self.cpu += (cpu_now() - self._start[1]) * 1000


Times = list[tuple[float, float]]


def one_run(opts: argparse.Namespace, rng: random.Random) -> tuple[Times, Times, Times, Times]:
    """A run in a fresh workspace: its first event, its later events, and the recording of the
    first batch and of the later ones (the tools' writes as the change log sees them, or the
    scan at the command's end)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        befores = {root / f"src/f{n}.py": content(n, opts.lines) for n in range(opts.files)}
        if opts.bash:
            hour_ago = time.time() - 3600  # as a user's files are: older than the run's snapshot
            for path, data in befores.items():
                path.parent.mkdir(exist_ok=True)
                path.write_bytes(data)
                os.utime(path, (hour_ago, hour_ago))
            git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@localhost"]
            subprocess.run([*git, "init", "-q"], cwd=tmp, check=True)
            subprocess.run([*git, "add", "-A"], cwd=tmp, check=True)
            subprocess.run([*git, "commit", "-qm", "base"], cwd=tmp, check=True)
        store = SessionStore.create(root / ".pi" / "sessions" / "bench.jsonl", "bench", tmp)
        log = ChangeLog(Workspace(tmp), store, root / ".pi")
        log.start()
        if opts.bash:
            asyncio.run(log.before_bash())

        def change(path: Path, data: bytes, clock: Clock) -> None:
            if opts.bash:
                path.write_bytes(data)
            else:
                with clock:
                    log.record(path, lambda: befores[path], data)

        def command_ends(clock: Clock) -> None:
            if opts.bash:
                with clock:  # as at the command's tool_execution_end
                    log._bash_ran = True
                    asyncio.run(log.scan())

        now = {}
        clock = Clock()
        for path, before in befores.items():
            now[path] = edited(before, rng)
            change(path, now[path], clock)
        command_ends(clock)
        first, recorded = [event(log)], [(clock.wall, clock.cpu)]
        times, recordings = [], []
        for _ in range(opts.events):
            clock = Clock()
            for path in rng.sample(sorted(now), opts.touch):
                now[path] = edited(now[path], rng)
                change(path, now[path], clock)
            command_ends(clock)
            times.append(event(log))
            recordings.append((clock.wall, clock.cpu))
        log.finish()
        store.close()
    return first, times, recorded, recordings


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--touch", type=int, default=3)
    parser.add_argument("--events", type=int, default=30)
    parser.add_argument("--runs", type=int, default=5, help="runs, each in a fresh workspace")
    parser.add_argument("--bash", action="store_true", help="changed by a command in a git work tree")
    opts = parser.parse_args()
    rng = random.Random(7)
    firsts: Times = []
    times: Times = []
    recorded: Times = []
    recordings: Times = []
    for _ in range(opts.runs):
        run = one_run(opts, rng)
        for into, rows in zip((firsts, times, recorded, recordings), run):
            into += rows
    how = "changed by a command in a git work tree" if opts.bash else "written by the tools"
    print(f"turn_diff, {opts.files} files x {opts.lines} lines, 3 hunks each, {how}")
    print("  wall / CPU ms (CPU: this process and its git children), median over the events (max)")
    table = [(f"first event (all {opts.files} files changed), {opts.runs} runs", firsts),
             (f"later events, {opts.touch} files touched since the last, {len(times)} events", times)]
    if opts.bash:
        table += [(f"scan at the end of the first command ({opts.files} files changed)", recorded),
                  (f"scan at the end of a later command ({opts.touch} files changed)", recordings)]
    else:
        table += [(f"recording the first batch ({opts.files} writes)", recorded),
                  (f"recording a later batch ({opts.touch} writes)", recordings)]
    for name, rows in table:
        wall, cpu = [t[0] for t in rows], [t[1] for t in rows]
        print(f"  {name}: {statistics.median(wall):8.1f} / {statistics.median(cpu):8.1f}"
              f"   (max {max(wall):.1f} / {max(cpu):.1f})")


if __name__ == "__main__":
    main()
