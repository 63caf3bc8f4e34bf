"""What checking an edit's diagnostics adds to it: the time per ``edit`` tool call, for a client
without language features (the baseline, in the same run), and for clients answering
``editor/diagnostics`` as the editor would for

* a file no language server watches (answered at once),
* a server that reports 50 ms after the change,
* a server that never reports (the client waits the whole ``diagnostics.waitMs`` bound).

Each run spawns the daemon with the offline faux model scripted to make ``--edits`` edits in a
row; the wall time from the prompt to ``agent_settled``, divided by the edits, is the figure.
Medians of ``--runs`` runs; the added time is the difference from the baseline's median.

Run: .venv/bin/python bench/edit_diagnostics.py [--edits 40] [--runs 5] [--wait-ms 300]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from common import precompile

from pi_daemon.client import Client
from pi_daemon.events import AgentSettled
from pi_daemon.rpc.types import DiagnosticsParams


def script(path: Path, edits: int) -> None:
    """One edit to warm up (its first editor request loads LSP's vocabulary), then ``edits`` in a row."""
    def edit(n: int) -> dict[str, Any]:
        return {"content": [{"type": "toolCall", "id": f"e{n}", "name": "edit", "arguments": {
            "path": "a.py", "edits": [{"oldText": f"x = {n}\n", "newText": f"x = {n + 1}\n"}]}}], "stopReason": "toolUse"}
    done = {"content": [{"type": "text", "text": "done"}]}
    path.write_text(json.dumps({"modelId": "bench", "replies": [edit(0), done, *map(edit, range(1, edits + 1)), done]}))


def prompt(client: Client, text: str) -> None:
    """Send a prompt and wait for its run to settle."""
    client.request_future("prompt", {"text": text})
    for params in client.events():
        if isinstance(params.event, AgentSettled):
            return


def one_run(edits: int, wait_ms: int, answer: Callable[[DiagnosticsParams], dict[str, Any]] | None) -> float:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / ".pi").mkdir()
        (root / ".pi" / "settings.json").write_text(json.dumps({"diagnostics": {"waitMs": wait_ms}}))
        (root / "a.py").write_text("x = 0\n")
        script(root / "script.json", edits)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"PI_DAEMON_HOME": str(root / "home")}
        handlers = {"editor/diagnostics": answer} if answer else {}
        client = Client("--faux-script", str(root / "script.json"), "--model", "faux/bench", "--yes", cwd=folder,
                        env=env, handlers=handlers, stderr=subprocess.DEVNULL)
        with client:
            features = {"languageFeatures": {"diagnostics": True}} if answer else {}
            client.request("initialize", {"protocolVersion": 1, "capabilities": features})
            client.request("getState")
            prompt(client, "warm up")
            started = time.perf_counter()
            prompt(client, "edit it")
            elapsed = time.perf_counter() - started
        assert (root / "a.py").read_text() == f"x = {edits + 1}\n"
        return elapsed / edits


def clean(params: DiagnosticsParams) -> dict[str, Any]:
    return {"items": [{"uri": u, "diagnostics": []} for u in params.uris or []]}


def after(ms: float) -> Callable[[DiagnosticsParams], dict[str, Any]]:
    def answer(params: DiagnosticsParams) -> dict[str, Any]:
        if params.wait_ms:
            time.sleep(min(ms, params.wait_ms) / 1000)
        return clean(params)
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--wait-ms", type=int, default=300)
    args = parser.parse_args()
    precompile()
    cases: dict[str, Callable[[DiagnosticsParams], dict[str, Any]] | None] = {
        "no language features (baseline)": None,
        "a file no server watches": clean,
        "a server reporting after 50 ms": after(50),
        f"a server that never reports (bound {args.wait_ms} ms)": after(10 ** 9),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.runs):  # interleaved, so that machine load hits every case alike
        for name, answer in cases.items():
            times[name].append(one_run(args.edits, args.wait_ms, answer))
    base = statistics.median(times["no language features (baseline)"])
    print(f"per edit, median of {args.runs} runs of {args.edits} edits:")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:48} {median * 1000:8.1f} ms  (+{(median - base) * 1000:.1f} ms)")


if __name__ == "__main__":
    main()
