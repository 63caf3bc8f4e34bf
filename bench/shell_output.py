"""The agent's bash printing 100 and 300 MB: prompt -> agent_settled time, daemon peak RSS.

Run: .venv/bin/python bench/shell_output.py [--sizes 100,300]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "rpc"))
from client import Daemon  # noqa: E402


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


def run(mb: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="pi-daemon-bench-") as tmp:
        command = f"yes 0123456789abcdef | head -c {mb * 1024 * 1024}"
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"modelId": "s", "replies": [
            {"content": [{"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": command}}],
             "stopReason": "toolUse"},
            {"content": [{"type": "text", "text": "done"}]}]}))
        d = Daemon("--allow", "bash", "--faux-script", str(script), "--model", "faux/s", cwd=tmp)
        try:
            d.call("getState")
            began = time.monotonic()
            d.call("prompt", {"text": "go"})
            d.wait_event("agent_settled", timeout=900)
            return time.monotonic() - began, peak_rss_mb(d.proc.pid)
        finally:
            d.kill()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,300")
    args = parser.parse_args()
    print(f"{'output':>8} {'prompt -> settled':>18} {'peak RSS':>10}")
    for mb in map(int, args.sizes.split(",")):
        elapsed, rss = run(mb)
        print(f"{mb:>6}MB {elapsed:>17.2f}s {rss:>9.1f}M")


if __name__ == "__main__":
    main()
