"""Start-up: what a client sends at spawn is served before pygls is loaded, exactly as after
(see pi_daemon/rpc/early.py), and pygls then takes over once the daemon is idle."""

import time

import pytest

from client import text, write_script


def _args(tmp_path, *replies, delay_ms=1):
    script = write_script(tmp_path / "script.json", list(replies), modelId="s", chunkSize=2, delayMs=delay_ms)
    return ["--faux-script", str(script), "--model", "faux/s", "--log-level", "debug"]


def _wait_log(d, line: bytes, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while line not in d.stderr:
        assert time.monotonic() < end, f"{line!r} not logged:\n{d.stderr.decode()[-2000:]}"
        time.sleep(0.02)


@pytest.mark.parametrize("framing", ["ndjson", "content-length"])
def test_requests_sent_at_spawn_are_answered_before_pygls_loads_and_the_same_after(spawn, tmp_path, framing):
    d = spawn(*_args(tmp_path, text("first answer"), text("second answer")), framing=framing)
    init = d.request_async("initialize", {"protocolVersion": 1})
    prompt = d.request_async("prompt", {"text": "hello"})
    state = d.request_async("getState")
    unknown = d.request_async("noSuchMethod")
    bad = d.request_async("prompt", {"text": 42})
    d.notify("noSuchNotification", {})
    assert d.wait_response(init)["result"]["protocolVersion"] == 1
    assert d.wait_response(prompt)["result"] == {"disposition": "started"}
    assert d.wait_response(state)["result"]["model"]["id"] == "s"
    assert d.wait_response(unknown)["error"] == {"code": -32601, "message": "unknown method: noSuchMethod"}
    error = d.wait_response(bad)["error"]
    assert error["code"] == -32602 and "params.text" in error["message"]
    d.wait_event("agent_settled")
    assert "first answer" in d.texts()
    assert b"prompt 2 served before pygls is loaded" in d.stderr
    assert b"pygls loaded" not in d.stderr.split(b"prompt 2 served before pygls")[0]

    _wait_log(d, b"pygls loaded")  # once idle, in the background
    again = d.request_async("prompt", {"text": "again"})
    assert d.wait_response(again)["result"] == {"disposition": "started"}
    d.wait_event("agent_settled", 2)
    assert "second answer" in d.texts()
    assert f"prompt {again!r} served before pygls".encode() not in d.stderr
    assert d.response_counts == {i: 1 for i in (init, prompt, state, unknown, bad, again)}


def test_a_request_served_before_pygls_loads_can_be_cancelled(spawn, tmp_path):
    d = spawn(*_args(tmp_path, text("z" * 400), delay_ms=10))
    d.request_async("initialize", {"protocolVersion": 1})
    d.call("prompt", {"text": "go"})
    waiting = d.request_async("waitForIdle")
    d.wait_event("message_update", 3)
    _wait_log(d, b"waitForIdle 3 served before pygls is loaded")
    d.notify("$/cancelRequest", {"id": waiting})
    assert d.wait_response(waiting)["error"]["code"] == -32800
    d.notify("$/cancelRequest", {"id": waiting})  # finished: ignored
    d.notify("$/cancelRequest", {"id": [1]})  # names no request: ignored, with a warning
    assert d.call("getState")["isStreaming"] in (True, False)
    d.wait_event("agent_settled", timeout=30)
    assert d.response_counts[waiting] == 1
    assert b"$/cancelRequest needs" in d.stderr
