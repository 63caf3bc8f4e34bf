"""Background processes over the real ``pi-daemon --acp``: ACP has no process list, so what the
client sees is the tool calls (a background ``bash``, ``process_output``, ``process_kill``); and
ACP's ``session/close`` ends the session's processes as the native one does."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from agent_shell import free_port, listening, poll
from client import clean_env, write_script
from lines import Lines


def tool(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}],
            "stopReason": "toolUse"}


def test_acp_shows_the_background_calls_and_close_ends_the_process(tmp_path: Path) -> None:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"sandbox": {"network": True}}))
    port = free_port()
    serve = f"python3 -m http.server {port} --bind 127.0.0.1"
    script = write_script(tmp_path / "script.json", [
        tool("bash", {"command": serve, "background": True}, "serve"),
        tool("bash", {"command": f"for i in $(seq 100); do curl -sf http://127.0.0.1:{port}/ >/dev/null && exit 0; "
                                 "sleep 0.1; done; exit 1"}, "get"),
        tool("process_output", {"id": "p1"}, "out"),
        {"content": [{"type": "text", "text": "it serves"}]},
    ], modelId="bg")
    daemon = Lines("--acp", "--allow", "bash", "--faux-script", str(script), "--model", "faux/bg", cwd=ws,
                   env=clean_env(home=str(home)))
    daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session_id = daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    answer = daemon.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    assert answer["result"]["stopReason"] == "end_turn"
    updates = [u for u in daemon.updates(session_id)]
    announced = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    ended = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status")
             in ("completed", "failed")}
    assert announced["serve"]["title"] == f"`{serve}` (in the background)"
    assert announced["serve"]["kind"] == "execute" and announced["serve"]["rawInput"]["background"] is True
    assert ended["serve"]["status"] == "completed"
    assert ended["serve"]["rawOutput"]["text"].startswith("Started background process p1 (pid ")
    assert ended["get"]["status"] == "completed"
    assert announced["out"]["title"] == "Output of background process p1" and announced["out"]["kind"] == "read"
    assert '"GET / HTTP/1.1" 200' in ended["out"]["rawOutput"]["text"]
    assert listening(port)
    closing = time.monotonic()
    assert "result" in daemon.request("session/close", {"sessionId": session_id})
    assert poll(lambda: not listening(port), max(0.0, 2 - (time.monotonic() - closing)))
    assert b"Traceback" not in daemon.close()
