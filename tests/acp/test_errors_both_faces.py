"""The native face and ACP answer the same failure with the same code: both are driven with
the same mistakes, over real pipes, and their error codes compared."""

from __future__ import annotations

import json

import pytest

from client import write_script
from lines import Lines

SLOW = {"content": [{"type": "text", "text": "word " * 400}]}


@pytest.fixture
def faces(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".pi").mkdir(parents=True)
    script = write_script(tmp_path / "slow.json", [SLOW, SLOW, SLOW], modelId="slow", chunkSize=3, delayMs=5)
    model = ["--faux-script", str(script), "--model", "faux/slow"]
    native = Lines(*model, cwd=ws)
    acp = Lines("--acp", *model, cwd=ws)
    assert "result" in native.request("initialize", {"protocolVersion": 1})
    assert "result" in acp.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    yield native, acp, ws
    for face in (native, acp):
        assert b"Traceback" not in face.close()


def test_the_same_failures_get_the_same_codes_on_both_faces(faces):
    native, acp, ws = faces
    sid = acp.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]["sessionId"]
    assert native.request("session/new", {})["result"]["sessionId"]
    codes: dict[str, tuple[int, int]] = {}

    codes["unknown session"] = (native.code("getState", {"sessionId": "nope"}),
                                acp.code("session/prompt", {"sessionId": "nope", "prompt": []}))
    codes["invalid params"] = (native.code("prompt", {"text": 42}),
                               acp.code("session/prompt", {"sessionId": sid, "prompt": 42}))
    codes["unknown method"] = (native.code("noSuchMethod", {}), acp.code("_pi/noSuchMethod", {}))
    codes["unknown slash command"] = (native.code("prompt", {"text": "/nosuch thing"}),
                                      acp.code("session/prompt", {"sessionId": sid,
                                                                  "prompt": [{"type": "text", "text": "/nosuch"}]}))
    codes["unknown model"] = (native.code("setModel", {"provider": "nowhere", "modelId": "none"}),
                              acp.code("session/set_config_option",
                                       {"sessionId": sid, "configId": "model", "value": "nowhere/none"}))

    # busy: the model cannot change while a run streams
    native.send("prompt", {"text": "go"})
    native.wait(lambda m: m.get("method") == "agent/event" and m["params"]["event"]["type"] == "message_update")
    running = acp.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]})
    acp.wait(lambda m: m.get("method") == "session/update"
             and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    codes["busy"] = (native.code("setModel", {"provider": "faux", "modelId": "slow"}),
                     acp.code("session/set_config_option", {"sessionId": sid, "configId": "model",
                                                            "value": "faux/slow"}))
    acp.send_raw(json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}).encode()
                 + b"\n")
    assert acp.answer(running)["result"]["stopReason"] == "cancelled"

    for face in (native, acp):
        face.send_raw(b'{"jsonrpc":"2.0","id":99,"method":\n')
    codes["unparsable frame"] = tuple(face.wait(lambda m: m.get("id") is None and "error" in m)["error"]["code"]
                                      for face in (native, acp))  # type: ignore[assignment]

    assert codes == {"unknown session": (-32002, -32002), "invalid params": (-32602, -32602),
                     "unknown method": (-32601, -32601), "unknown slash command": (-32010, -32010),
                     "unknown model": (-32004, -32004), "busy": (-32001, -32001),
                     "unparsable frame": (-32700, -32700)}, codes
