"""A background process printing 100 MB: how much the daemon's RSS grows (target < 20 MB).

The daemon is warmed first (a foreground and a background command, so their code is loaded),
its peak RSS is reset (``/proc/PID/clear_refs``), then the agent starts ``yes | head -c 100M``
in the background while a client polls ``process/output`` as a process panel would. Growth is
the peak RSS during the output minus the RSS before it. Median of ``--runs`` daemons.

Run: .venv/bin/python bench/background_output.py [--mb 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rpc"))
from client import Daemon  # noqa: E402


def status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field + ":"))


def bash(command: str, call_id: str, background: bool) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "bash",
                         "arguments": {"command": command, "background": background}}], "stopReason": "toolUse"}


def run(mb: int) -> tuple[float, float]:
    """(RSS growth in MB, seconds until the process had printed it all)."""
    size = mb * 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="pi-daemon-bench-") as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"modelId": "s", "replies": [
            bash("echo warm", "w1", False), bash("echo warm", "w2", True), {"content": [{"type": "text", "text": "ok"}]},
            bash(f"yes 0123456789abcdef | head -c {size}", "big", True), {"content": [{"type": "text", "text": "ok"}]},
        ]}))
        d = Daemon("--allow", "bash", "--faux-script", str(script), "--model", "faux/s", cwd=tmp)
        try:
            d.call("prompt", {"text": "warm up"})
            d.wait_event("agent_settled", timeout=60)
            pid = d.proc.pid
            Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak RSS starts again from now
            before = status_kb(pid, "VmRSS")
            began = time.monotonic()
            d.call("prompt", {"text": "print a lot"})
            since = 0
            while True:
                procs = [p for p in d.call("process/list", {})["processes"] if p["command"].startswith("yes")]
                if procs:
                    out = d.call("process/output", {"id": procs[0]["id"], "since": since})
                    since = out["next"]
                    if out["status"] != "running" and since == size:
                        break
                time.sleep(0.2)
            elapsed = time.monotonic() - began
            d.wait_event("agent_settled", count=2, timeout=60)
            return (status_kb(pid, "VmHWM") - before) / 1024, elapsed
        finally:
            d.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    growths = []
    for i in range(args.runs):
        growth, elapsed = run(args.mb)
        growths.append(growth)
        print(f"run {i + 1}: {args.mb} MB of background output in {elapsed:.1f} s, daemon RSS grew {growth:.1f} MB")
    print(f"median RSS growth: {statistics.median(growths):.1f} MB (target < 20 MB)")


if __name__ == "__main__":
    main()
