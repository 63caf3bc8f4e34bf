"""Permission answers that steer over the real ``pi-daemon --acp``: ACP v1 has four option kinds and
five stop reasons, so reject-and-stop is a fifth option of kind ``reject_once`` that ends the turn
``end_turn`` with ``_meta.pi.stopReason: "rejected"``; a reason or an edited call travels in the
selected outcome's ``_meta.pi``. Every request and answer is checked with the official SDK's models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import PromptResponse, RequestPermissionRequest, RequestPermissionResponse, SessionNotification

from client import write_script
from lines import Lines


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".pi").mkdir(parents=True)
    return folder


def calls(*specs: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in specs],
            "stopReason": "toolUse"}


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}]}


def start(ws: Path, replies: list[dict[str, Any]]) -> tuple[Lines, str]:
    script = write_script(ws.parent / "script.json", replies, modelId="steer")
    daemon = Lines("--acp", "--faux-script", str(script), "--model", "faux/steer", cwd=ws)
    assert "result" in daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    answer = daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})
    return daemon, str(answer["result"]["sessionId"])


def asked(daemon: Lines) -> dict[str, Any]:
    request = daemon.wait(lambda m: m.get("method") == "session/request_permission")
    RequestPermissionRequest.model_validate(request["params"])
    return request


def choose(daemon: Lines, request: dict[str, Any], option: str, **pi: Any) -> None:
    outcome: dict[str, Any] = {"outcome": "selected", "optionId": option}
    if pi:
        outcome["_meta"] = {"pi": pi}
    RequestPermissionResponse.model_validate({"outcome": outcome})
    daemon.send_raw(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}}).encode()
                    + b"\n")


def finished(daemon: Lines, session_id: str) -> dict[str, str]:
    """toolCallId -> its final status and text."""
    return {u["toolCallId"]: u["status"] + ": " + u["rawOutput"]["text"] for u in daemon.updates(session_id)
            if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")}


def said(daemon: Lines, session_id: str) -> str:
    return "".join(u["content"]["text"] for u in daemon.updates(session_id)
                   if u["sessionUpdate"] == "agent_message_chunk")


def stop(daemon: Lines) -> None:
    for message in daemon.log:
        if message.get("method") == "session/update":
            SessionNotification.model_validate(message["params"])
    assert b"Traceback" not in daemon.close()


def test_reject_and_stop_is_a_fifth_option_and_ends_the_turn_with_a_meta_stop_reason(ws):
    daemon, session_id = start(ws, [calls(("a", "bash", {"command": "echo a > a.txt"}),
                                          ("b", "bash", {"command": "echo b > b.txt"})),
                                    text("never streamed")])
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    first, second = asked(daemon), asked(daemon)
    options = {o["optionId"]: o for o in first["params"]["options"]}
    assert options["reject_and_stop"] == {"optionId": "reject_and_stop", "name": "Reject and stop",
                                          "kind": "reject_once"}
    choose(daemon, first, "reject_and_stop", reason="not now")
    withdrawn = daemon.wait(lambda m: m.get("method") == "$/cancel_request")
    assert withdrawn["params"] == {"requestId": second["id"]}
    answer = daemon.answer(running)["result"]
    PromptResponse.model_validate(answer)
    assert answer == {"stopReason": "end_turn", "_meta": {"pi": {"stopReason": "rejected"}}}
    done = finished(daemon, session_id)
    stopped = first["params"]["toolCall"]["toolCallId"]
    other = second["params"]["toolCall"]["toolCallId"]
    assert done[stopped] == "failed: The user rejected this call and stopped the run: not now"
    assert done[other].startswith("failed: This call was not run")
    assert "never streamed" not in said(daemon, session_id)
    assert not (ws / "a.txt").exists() and not (ws / "b.txt").exists()
    stop(daemon)


def test_a_reason_and_an_edited_call_travel_in_the_selected_outcomes_meta(ws):
    daemon, session_id = start(ws, [calls(("r", "bash", {"command": "rm -rf .pi"})),
                                    calls(("e", "bash", {"command": "echo model > out.txt"})),
                                    text("carried on")])
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    choose(daemon, asked(daemon), "reject_once", reason="Leave .pi alone.")
    choose(daemon, asked(daemon), "allow_once", editedArgs={"command": "echo user > out.txt"})
    answer = daemon.answer(running)["result"]
    assert answer == {"stopReason": "end_turn"}
    done = finished(daemon, session_id)
    assert done["r"] == "failed: The user declined this call: Leave .pi alone."
    assert done["e"].startswith('completed: The user edited this call before it ran; what ran: '
                                '{"command": "echo user > out.txt"}')
    assert (ws / "out.txt").read_text() == "user\n" and (ws / ".pi").is_dir()
    shown = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "tool_call_update"
             and u["toolCallId"] == "e" and "rawInput" in u]
    assert shown and shown[0]["rawInput"] == {"command": "echo user > out.txt"}
    assert "carried on" in said(daemon, session_id)
    stop(daemon)
