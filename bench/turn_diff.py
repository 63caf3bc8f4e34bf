"""Cost of one ``turn_diff`` event for a run that has touched 200 files of 2,000 lines.

In process, through the session's change log (:mod:`pi_daemon.session.changes`) the way a
run drives it: ``write``/``edit`` record each file at the file-access seam, and after a
tool batch the event is built — per-file diffs (cached until the file is touched again),
the contents stored as blobs, the ``turn_changes`` entry appended to a real session file,
and the event serialised to JSON as it goes on the wire.

  * ``first``: the batch that touched all 200 files at once (every diff computed);
  * ``per event``: each later batch edits ``--touch`` of the 200 files (default 3),
    and the event lists all 200 again.

Each figure is the median over ``--events`` events, in milliseconds: wall-clock and the
process's CPU time (the one to read on a shared, loaded machine).

Run: .venv/bin/python bench/turn_diff.py [--files 200] [--lines 2000] [--touch 3] [--events 30]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from pi_daemon.converter import to_wire
from pi_daemon.events import TurnDiff
from pi_daemon.session.changes import ChangeLog
from pi_daemon.session.store import SessionStore
from pi_daemon.tools.workspace import Workspace


def content(n: int, lines: int) -> bytes:
    return "".join(f"    value_{n}_{k} = compute({k}, 'a line of ordinary source text')\n"
                   for k in range(lines)).encode()


def edited(data: bytes, rng: random.Random) -> bytes:
    lines = data.splitlines(keepends=True)
    for _ in range(3):  # three hunks
        k = rng.randrange(len(lines))
        lines[k] = lines[k].replace(b"compute", b"recompute")
    return b"".join(lines)


def event(log: ChangeLog) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one event."""
    start, cpu = time.perf_counter(), time.process_time()
    files = log.turn_diff()
    json.dumps(to_wire(TurnDiff(run_id=log.run_id or "", files=files or [])))
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--touch", type=int, default=3)
    parser.add_argument("--events", type=int, default=30)
    opts = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = SessionStore.create(root / ".pi" / "sessions" / "bench.jsonl", "bench", tmp)
        log = ChangeLog(Workspace(tmp), store, root / ".pi")
        log.start()
        now = {}
        for n in range(opts.files):
            path = root / f"src/f{n}.py"
            before = content(n, opts.lines)
            now[path] = edited(before, rng)
            log.record(path, lambda before=before: before, now[path])
        first = event(log)
        times = []
        for _ in range(opts.events):
            for path in rng.sample(sorted(now), opts.touch):
                now[path] = edited(now[path], rng)
                log.record(path, lambda: b"", now[path])
            times.append(event(log))
        store.close()
    wall, cpu = [t[0] for t in times], [t[1] for t in times]
    print(f"turn_diff, {opts.files} files x {opts.lines} lines, 3 hunks each (wall / CPU ms)")
    print(f"  first event (all {opts.files} files diffed): {first[0]:8.1f} / {first[1]:8.1f}")
    print(f"  per event, {opts.touch} files touched since the last: {statistics.median(wall):8.1f} / "
          f"{statistics.median(cpu):8.1f} (median of {opts.events}; max {max(wall):.1f} / {max(cpu):.1f})")


if __name__ == "__main__":
    main()
