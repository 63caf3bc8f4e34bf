"""Session store performance.

  * ``session/load`` of a 10,000-entry (~20 MB) session through the daemon;
  * append cost per entry with 100 and with 10,000 entries already in the file;
  * ``session/list`` over 500 session files through the daemon.

Run: .venv/bin/python bench/sessions.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import precompile

from pi_daemon.client import Client
from pi_daemon.session.store import SessionStore

USAGE = {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def write_session(folder: Path, sid: str, entries: int, answer_chars: int, cwd: str) -> Path:
    lines = [json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": cwd}, separators=(",", ":"))]
    parent = None
    for n in range(entries):
        if n % 2 == 0:
            message = {"role": "user", "content": f"question {n}: please look at module_{n}.py", "timestamp": n}
        else:
            message = {"role": "assistant", "content": [{"type": "text", "text": "x" * answer_chars}], "api": "faux",
                       "provider": "faux", "model": "echo", "usage": USAGE, "stopReason": "stop", "timestamp": n}
        lines.append(json.dumps({"type": "message", "id": f"{n:08x}", "parentId": parent,
                                 "timestamp": "2026-01-01T00:00:00.000Z", "message": message}, separators=(",", ":")))
        parent = f"{n:08x}"
    path = folder / f"2026-01-01T00-00-{len(list(folder.iterdir())):06d}Z_{sid}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def start(workspace: str) -> Client:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PI_DAEMON_HOME"] = workspace
    return Client("--model", "faux/echo", cwd=workspace, env=env)


def timed(pi: Client, method: str, params: dict) -> tuple[Any, float]:
    """The typed result of a request and the seconds from sending it to its reply."""
    started = time.perf_counter()
    result = pi.request(method, params)
    return result, time.perf_counter() - started


def append_cost(folder: Path, existing: int, count: int = 2000) -> float:
    path = write_session(folder, f"append-{existing}", existing, 200, str(folder))
    store = SessionStore.open(path)
    message = {"role": "assistant", "content": [{"type": "text", "text": "y" * 200}], "api": "faux", "provider": "faux",
               "model": "echo", "usage": USAGE, "stopReason": "stop", "timestamp": 1}
    started = time.perf_counter()
    for _ in range(count):
        store.append("message", message=message)
    elapsed = time.perf_counter() - started
    store.close()
    return elapsed / count * 1e6


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workspace:
        folder = Path(workspace) / ".pi" / "sessions"
        folder.mkdir(parents=True)
        big = write_session(folder, "big", 10_000, 4000, workspace)
        size_mb = big.stat().st_size / 1e6
        loads = []
        for _ in range(args.runs):
            with start(workspace) as pi:
                pi.request("listModels")  # everything loaded, no session created
                result, elapsed = timed(pi, "session/load", {"sessionId": "big"})
                assert result.state.message_count == 10_000
                loads.append(elapsed)
        big.unlink()
        for n in range(500):
            write_session(folder, f"s{n:03d}", 40, 400, workspace)
        lists = []
        with start(workspace) as pi:
            pi.request("listModels")
            for _ in range(args.runs):
                result, elapsed = timed(pi, "session/list", {})
                assert len(result.sessions) == 500
                lists.append(elapsed)
        appends = {n: [append_cost(Path(tempfile.mkdtemp(dir=workspace)), n) for _ in range(args.runs)]
                   for n in (100, 10_000)}
    med = statistics.median
    print(f"{'measure':<52} {'median':>10} {'min':>10} {'max':>10} {'target':>8}")
    print(f"{f'session/load, 10,000 entries ({size_mb:.1f} MB)':<52} {med(loads):>9.3f}s {min(loads):>9.3f}s "
          f"{max(loads):>9.3f}s {0.3:>7.2f}s  {'yes' if med(loads) <= 0.3 else 'NO'}")
    print(f"{'session/list, 500 files':<52} {med(lists):>9.3f}s {min(lists):>9.3f}s {max(lists):>9.3f}s "
          f"{0.5:>7.2f}s  {'yes' if med(lists) <= 0.5 else 'NO'}")
    for n, values in appends.items():
        print(f"{f'append, file already holding {n:,} entries':<52} {med(values):>8.1f}us {min(values):>8.1f}us "
              f"{max(values):>8.1f}us")
    print(f"append cost ratio 10,000 / 100 entries: {med(appends[10_000]) / med(appends[100]):.2f} "
          f"(constant = 1.0); median of {args.runs} runs")


if __name__ == "__main__":
    main()
