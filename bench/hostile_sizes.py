"""One pathological item a cloned repository or a local port can hold, through the daemon over stdio.

  * a session file shipped in ``.pi/sessions`` with one message line of ``--line-mib`` MiB
    (400 by default) beside 20 ordinary sessions: ``session/list`` and ``session/search``
    on that workspace, each with the daemon's peak RSS during the request over its RSS
    before it (the peak is reset before each request: ``/proc/<pid>/clear_refs``). The
    target: search at most 2x list, its peak at most 64 MiB over the RSS before;
  * ``probeLocalServers`` asked about 16 loopback servers that answer a byte a second,
    and ``session/list`` asked while that probe is under way. The target: the probe
    answers within 5 s, the list within 1 s.

Each figure is the median of ``--runs``, in one daemon per workload after a first,
unmeasured request. To measure another checkout of the daemon, put it first on
``PYTHONPATH`` (the daemon is started with this interpreter); a request that gets no
answer within ``--give-up`` seconds (60 at most for the probe) is shown as ``>N``.

Run: .venv/bin/python bench/hostile_sizes.py [--runs 5] [--line-mib 400] [--give-up 300]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from common import precompile
from sessions import start, write_session


def memory_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key + ":"))


def shipped_session(folder: Path, line_mib: int, cwd: str) -> None:
    """A session whose second line is one user message of ``line_mib`` MiB (the query in it)."""
    header = {"type": "session", "version": 3, "id": "shipped", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": cwd}
    with open(folder / "2026-02-01T00-00-00-000Z_shipped.jsonl", "w") as out:
        out.write(json.dumps(header) + "\n")
        out.write('{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user",'
                  '"content":"question needle ')
        piece = "x" * (1 << 20)
        for _ in range(line_mib):
            out.write(piece)
        out.write('"}}\n')


def timed(pi, method: str, params: dict, give_up: float) -> tuple[float, float, object]:
    """Seconds to the answer (``inf`` past ``give_up``), MiB the peak RSS rose over the RSS before, the result."""
    pid = pi.proc.pid
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")
    before = memory_kb(pid, "VmRSS")
    started = time.perf_counter()
    try:
        result = pi.request(method, params, timeout=give_up)
    except concurrent.futures.TimeoutError:
        return float("inf"), (memory_kb(pid, "VmHWM") - before) / 1024, None
    return time.perf_counter() - started, (memory_kb(pid, "VmHWM") - before) / 1024, result


def long_line(runs: int, line_mib: int, give_up: float) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"list": [], "list rss": [], "search": [], "search rss": [], "skipped": [0]}
    with tempfile.TemporaryDirectory(prefix="pi-hostile-") as workspace:
        folder = Path(workspace) / ".pi" / "sessions"
        folder.mkdir(parents=True)
        for n in range(20):
            write_session(folder, f"s{n:02d}", 40, 400, workspace)
        first = next(folder.glob("*_s00.jsonl"))
        first.write_text(first.read_text().replace("question 2:", "question 2: the needle", 1))
        shipped_session(folder, line_mib, workspace)
        with start(workspace) as pi:
            pi.request("listModels")
            pi.request("session/list", {})  # first, unmeasured: the file in the page cache
            for _ in range(runs):  # interleaved: both see the same machine load
                for method, params in (("session/list", {}), ("session/search", {"query": "needle"})):
                    seconds, grown, result = timed(pi, method, params, give_up)
                    what = method.split("/")[1]
                    figures[what].append(seconds)
                    figures[what + " rss"].append(grown)
                    if method == "session/search" and result is not None:
                        assert "s00" in {m.session_id for m in result.matches}, result.matches
                        figures["skipped"] = [len(getattr(result, "skipped", None) or [])]  # None: a daemon before it
                    if seconds == float("inf"):
                        return figures  # the daemon is still at it: the next request would wait behind it
    return figures


class Trickling:
    """``count`` HTTP servers on free loopback ports answering a byte a second from the status line on."""

    def __init__(self, count: int) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.servers = [asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0), self.loop).result(5) for _ in range(count)]
        self.urls = [f"http://127.0.0.1:{s.sockets[0].getsockname()[1]}/v1" for s in self.servers]

    @staticmethod
    async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n" + b" " * 100_000:
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1.0)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def close(self) -> None:
        async def stop() -> None:
            for server in self.servers:
                server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def trickling_probe(runs: int, give_up: float) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"probe": [], "list": []}
    trickling = Trickling(16)
    try:
        with tempfile.TemporaryDirectory(prefix="pi-hostile-") as workspace:
            with start(workspace) as pi:
                pi.request("session/list", {})
                for _ in range(runs):
                    started = time.perf_counter()
                    probe = pi.request_future("probeLocalServers", {"urls": trickling.urls})
                    time.sleep(0.2)  # the probe under way
                    seconds, _, _ = timed(pi, "session/list", {}, give_up)
                    figures["list"].append(seconds)
                    try:
                        probe.result(max(0.0, give_up - (time.perf_counter() - started)))
                        figures["probe"].append(time.perf_counter() - started)
                    except concurrent.futures.TimeoutError:
                        figures["probe"].append(float("inf"))
                    if float("inf") in (figures["probe"][-1], seconds):
                        break  # the daemon's threads are still held: the next run would only wait longer
                pi.proc.kill()
    finally:
        trickling.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--line-mib", type=int, default=400)
    parser.add_argument("--give-up", type=float, default=300.0, help="seconds to wait for one answer")
    args = parser.parse_args()
    precompile()
    probe_give_up = min(args.give_up, 60.0)
    lines = long_line(args.runs, args.line_mib, args.give_up)
    probes = trickling_probe(args.runs, probe_give_up)

    def med(values: list[float], give_up: float = args.give_up) -> str:
        value = statistics.median(values)
        return f">{give_up:.0f}" if value == float("inf") else f"{value:.3f}"

    print(f"{'measure':<66} {'median':>9} {'peak RSS over before':>21}")
    for what in ("list", "search"):
        print(f"{f'session/{what}, a session with one {args.line_mib} MiB line + 20 sessions':<66} "
              f"{med(lines[what]):>8}s {statistics.median(lines[what + ' rss']):>17.1f} MiB")
    ratio = statistics.median(lines["search"]) / statistics.median(lines["list"])
    print(f"search / list: {ratio:.2f}x (target <= 2x); search peak over before: "
          f"{statistics.median(lines['search rss']):.1f} MiB (target <= 64 MiB); "
          f"lines named in skipped: {lines['skipped'][0]:.0f}")
    for what, label, target in (("probe", "probeLocalServers, 16 servers answering a byte a second", 5),
                                ("list", "session/list while that probe is under way", 1)):
        print(f"{label:<66} {med(probes[what], probe_give_up):>8}s {f'(target <= {target} s)':>21}")
    print(f"(medians of {len(lines['search'])} / {len(probes['probe'])} runs; {os.cpu_count()} cores; "
          f"{time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
