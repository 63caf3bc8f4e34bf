"""The SIGKILL loop: kill the daemon at random moments of streams and tool runs, then check.

After each kill: no process any command started is left (a /proc scan for the loop's
marker), every session file loads (``session/load``), and each prompt the daemon
accepted is in its session — only the answer being streamed may be lost.
Used by ``tests/rpc/test_sigkill_loop.py`` (a few kills) and ``scripts/sigkill-loop``.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from agent_shell import bash_call, unique_seconds, wait_alive, wait_gone
from client import Daemon, text, write_script


def kill_loop(workspace: Path, kills: int, seed: int | None = None, log=lambda *_: None) -> dict:
    rng = random.Random(seed)
    mark = unique_seconds()
    command = (f"setsid -f sleep {mark}; (sleep {mark} &); "
               "for i in $(seq 40); do echo line $i; sleep 0.02; done")
    faux = str(write_script(workspace.parent / "script.json", [bash_call(command), text("streamed answer " * 200)],
                            modelId="s", chunkSize=2, delayMs=1))
    accepted: dict[str, str] = {}  # prompt text -> session id
    tool_done: set[str] = set()  # sessions whose tool result the client saw before the kill
    figures = {"kills": 0, "orphans": 0, "sessions_loaded": 0, "prompts_checked": 0, "during_tool": 0,
               "tool_results_checked": 0}
    for n in range(kills):
        d = Daemon("--allow", "bash", "--faux-script", faux, "--model", "faux/s", cwd=str(workspace))
        try:
            session = d.call("session/new", {})["sessionId"]
            prompt = f"prompt {n}"
            d.call("prompt", {"text": prompt, "sessionId": session})
            accepted[prompt] = session
            time.sleep(rng.uniform(0.0, 2.5))
            if wait_alive(mark, 1, timeout=0):
                figures["during_tool"] += 1
            d.proc.kill()
            if any(e["event"]["type"] == "tool_execution_end" for e in list(d.events)):
                tool_done.add(session)
            d.proc.wait(10)
        finally:
            d.kill()
        figures["kills"] += 1
        left = wait_gone(mark)
        figures["orphans"] += len(left)
        log(f"kill {n + 1}/{kills}: orphans {len(left)}")
        assert not left, f"kill {n + 1}: processes survived the daemon: {left}"
    d = Daemon("--model", "faux/echo", cwd=str(workspace))
    try:
        files = sorted((workspace / ".pi" / "sessions").glob("*.jsonl"))
        by_session: dict[str, list] = {}
        for f in files:
            loaded = d.call("session/load", {"file": str(f)})
            messages = d.call("getMessages", {"sessionId": loaded["sessionId"]})["messages"]
            by_session[loaded["sessionId"]] = messages
            figures["sessions_loaded"] += 1
        for prompt, session in accepted.items():
            users = [m for m in by_session[session] if m["role"] == "user"]
            assert any(prompt in str(m["content"]) for m in users), f"{prompt!r} lost from {session}"
            figures["prompts_checked"] += 1
            if session in tool_done:
                assert any(m["role"] == "toolResult" for m in by_session[session]), f"tool result lost from {session}"
                figures["tool_results_checked"] += 1
    finally:
        d.kill()
    return figures
