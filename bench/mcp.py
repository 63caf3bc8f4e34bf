"""MCP start-up: initialize is not slowed by configured servers; time until a server is ready; a call.

Run: .venv/bin/python bench/mcp.py [--runs 5]
Each run starts a daemon without and with an ``mcp.json`` naming the SDK-written demo
server of the tests, measures spawn -> initialize response for both, then polls
``listTools`` until the server is ready and times ``tools/call`` round trips through a
scripted faux model (prompt -> agent_settled for one ``demo__add`` call).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import precompile
from daemon import start_and_initialize

from pi_daemon.events import AgentSettled, ToolExecutionEnd
from pi_daemon.rpc.types import PromptParams

DEMO = str(Path(__file__).resolve().parents[1] / "tests" / "rpc" / "mcp_demo_server.py")


def one_run(home: str, cwd: str, script: str, with_mcp: bool) -> dict[str, float]:
    mcp = os.path.join(home, "mcp.json")
    if with_mcp:
        with open(mcp, "w") as f:
            json.dump({"mcpServers": {"demo": {"command": sys.executable, "args": [DEMO]}}}, f)
    elif os.path.exists(mcp):
        os.unlink(mcp)
    os.environ["PI_DAEMON_HOME"] = home
    pi, init_s = start_and_initialize(["--faux-script", script, "--model", "faux/bench", "--allow", "mcp"], cwd)
    result = {"init": init_s}
    with pi:
        if with_mcp:
            started = time.perf_counter()
            while True:
                servers = pi.request("listTools").servers
                if servers and servers[0].state in ("ready", "failed"):
                    assert servers[0].state == "ready", servers
                    break
                time.sleep(0.02)
            result["ready"] = time.perf_counter() - started + init_s
            started = time.perf_counter()
            pi.request_future("prompt", PromptParams(text="go"))
            for params in pi.events():
                if isinstance(params.event, ToolExecutionEnd):
                    assert not params.event.is_error, params.event
                if isinstance(params.event, AgentSettled):
                    break
            result["call"] = time.perf_counter() - started
        return result


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cwd, tempfile.TemporaryDirectory() as home:
        script = os.path.join(cwd, "bench.json")
        call = {"content": [{"type": "toolCall", "id": "c", "name": "demo__add", "arguments": {"a": 1, "b": 2}}],
                "stopReason": "toolUse"}
        with open(script, "w") as f:
            json.dump({"modelId": "bench", "replies": [call, {"content": [{"type": "text", "text": "ok"}]}]}, f)
        plain = [one_run(home, cwd, script, False) for _ in range(args.runs)]
        mcp = [one_run(home, cwd, script, True) for _ in range(args.runs)]
    rows = [("spawn -> initialize response, no mcp.json", [r["init"] for r in plain]),
            ("spawn -> initialize response, one MCP server", [r["init"] for r in mcp]),
            ("spawn -> server ready (listTools)", [r["ready"] for r in mcp]),
            ("prompt -> settled, one demo__add call", [r["call"] for r in mcp])]
    print(f"{'measure':<48} {'median':>8} {'min':>8} {'max':>8}")
    for label, values in rows:
        print(f"{label:<48} {statistics.median(values):>7.3f}s {min(values):>7.3f}s {max(values):>7.3f}s")
    print(f"(median of {args.runs} runs)")


if __name__ == "__main__":
    main()
