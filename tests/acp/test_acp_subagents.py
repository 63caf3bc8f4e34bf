"""Subagents over ``pi-daemon --acp``: the task call's content streams the child's progress;
the child is no ACP session of its own (no updates, not listed; its permission requests name
the parent's session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from client import write_script
from lines import Lines


def reply(*calls: tuple[str, str, dict[str, Any]], text: str = "", when: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    out: dict[str, Any] = {"content": content, "stopReason": "toolUse" if calls else "stop"}
    if when is not None:
        out["when"] = when
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".pi").mkdir(parents=True)
    return folder


def start(ws: Path, replies: list[dict[str, Any]], *args: str, delay_ms: int = 0) -> Lines:
    script = write_script(ws.parent / "script.json", replies, modelId="acpsub", chunkSize=3, delayMs=delay_ms)
    daemon = Lines("--acp", "--faux-script", str(script), "--model", "faux/acpsub", *args, cwd=ws)
    assert "result" in daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    return daemon


def test_the_task_call_streams_the_childs_text_and_the_child_is_no_acp_session(ws):
    answer = "The child looked around and found " + "many things " * 30
    daemon = start(ws, [
        reply(("t1", "task", {"prompt": "explore the code", "description": "explore"})),
        reply(("c1", "ls", {"path": "."}), when="explore"), reply(text=answer, when="explore"),
        reply(text="parent done"),
    ], delay_ms=2)  # the answer streams for longer than the progress's 0.1 s between updates
    session_id = daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    done = daemon.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    assert done["result"]["stopReason"] == "end_turn"
    updates = daemon.updates(session_id)
    call = next(u for u in updates if u["sessionUpdate"] == "tool_call" and u["toolCallId"] == "t1")
    assert call["title"] == "Subagent: explore"
    progress = [u["content"][0]["content"]["text"] for u in updates
                if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "t1" and u.get("content")
                and u.get("status") is None]
    assert progress and progress[0].startswith("[ls] .")  # the child's tool call, then its answer as it grows
    assert any(answer[:40] in p and answer.strip() not in p for p in progress)  # part of the answer, streaming
    assert answer.strip() in progress[-1]
    final = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == "t1"
             and u.get("status") == "completed"]
    assert final and final[0]["rawOutput"]["text"] == answer
    others = {m["params"]["sessionId"] for m in daemon.log if m.get("method") == "session/update"}
    assert others == {session_id}  # nothing of the child as a session of its own
    listed = daemon.request("session/list", {"cwd": str(ws)})["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id]
    assert b"Traceback" not in daemon.close()


def test_a_childs_permission_request_names_the_parents_session(ws):
    daemon = start(ws, [
        reply(("t1", "task", {"prompt": "write it"})),
        reply(("w1", "write", {"path": "out.txt", "content": "x"}), when="write it"), reply(text="ok", when="write it"),
        reply(text="parent done"),
    ])
    session_id = daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    asked = daemon.wait(lambda m: m.get("method") == "session/request_permission")
    params = asked["params"]
    assert params["sessionId"] == session_id and params["toolCall"]["toolCallId"] == "w1"
    assert params["_meta"]["pi"]["subagent"]["parentToolCallId"] == "t1"
    assert params["_meta"]["pi"]["subagent"]["sessionId"] != session_id
    daemon.send_raw(json.dumps({"jsonrpc": "2.0", "id": asked["id"], "result": {
        "outcome": {"outcome": "selected", "optionId": "allow_once"}}}).encode() + b"\n")
    assert daemon.answer(running)["result"]["stopReason"] == "end_turn"
    assert (ws / "out.txt").read_text() == "x"
    assert b"Traceback" not in daemon.close()
