"""initialize, state, models, thinking levels, queue modes, sessions, images."""

from pi_daemon.rpc import methods
from pi_daemon.rpc.registry import METHODS

methods.load_all()


def test_initialize_negotiates_and_lists_methods(spawn):
    d = spawn("--model", "faux/echo")
    result = d.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "test", "version": "1"},
                                   "capabilities": {"permissions": False}})
    assert result["protocolVersion"] == 1
    assert result["serverInfo"]["name"] == "pi-daemon"
    caps = result["capabilities"]
    assert set(caps["methods"]) == {m for m, spec in METHODS.items() if spec.is_request}
    assert "agent_settled" in caps["events"] and "message_update" in caps["events"]
    assert caps["framings"] == ["ndjson", "content-length"]
    again = d.request("initialize", {})
    assert again["error"]["code"] == -32600 and "already" in again["error"]["message"]


def test_initialize_names_the_workspace(spawn, tmp_path):
    """The workspace root, absolute: from --workspace, or the folder the daemon started in,
    whether initialize comes first or after other requests."""
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    leading = spawn("--model", "faux/echo", "--workspace", "project", cwd=str(tmp_path))
    assert leading.call("initialize", {})["workspace"] == str(root)

    later = spawn("--model", "faux/echo", cwd=str(root / "sub"))
    later.call("getState")
    assert later.call("initialize", {})["workspace"] == str(root / "sub")


def test_initialize_refuses_unknown_protocol_version(spawn):
    d = spawn("--model", "faux/echo")
    error = d.request("initialize", {"protocolVersion": 99})["error"]
    assert error["code"] == -32600 and "version 99 is not supported" in error["message"]
    assert d.call("initialize", {"protocolVersion": 1})["protocolVersion"] == 1


def test_state_models_and_settings(spawn):
    d = spawn("--model", "faux/echo")
    state = d.call("getState")
    assert state["model"]["provider"] == "faux" and state["model"]["id"] == "echo"
    assert state["thinkingLevel"] == "off" and state["steeringMode"] == "one-at-a-time"
    models = d.call("listModels")["models"]
    assert {"provider": "faux", "id": "echo"}.items() <= models[0].items()
    bad = d.request("setModel", {"provider": "nope", "modelId": "x"})["error"]
    assert bad["code"] == -32004 and "unknown model nope/x" in bad["message"]
    assert d.call("setModel", {"provider": "faux", "modelId": "echo"})["model"]["id"] == "echo"
    assert d.wait_event("model_changed")["event"] == {"type": "model_changed", "provider": "faux", "modelId": "echo"}
    assert d.call("setThinkingLevel", {"level": "high"})["level"] == "high"
    assert d.wait_event("thinking_level_changed")["event"]["level"] == "high"
    bad = d.request("setThinkingLevel", {"level": "ultra"})["error"]
    assert bad["code"] == -32602 and "params.level" in bad["message"]
    modes = d.call("setQueueModes", {"steering": "all"})
    assert modes == {"steering": "all", "followUp": "one-at-a-time"}
    assert d.call("getState")["steeringMode"] == "all"


def test_no_model_is_a_clear_error(spawn):
    d = spawn()
    error = d.request("prompt", {"text": "hi"})["error"]
    assert error["code"] == -32004 and "no model is selected" in error["message"]


def test_sessions_are_separate_and_events_name_them(spawn):
    d = spawn("--model", "faux/echo")
    a = d.call("session/new", {"name": "a"})["sessionId"]
    b = d.call("session/new", {"name": "b"})["sessionId"]
    assert a != b
    d.call("prompt", {"text": "to a", "sessionId": a})
    d.call("prompt", {"text": "to b", "sessionId": b})
    d.wait_event("agent_settled", session_id=a)
    d.wait_event("agent_settled", session_id=b)
    for sid in (a, b):
        seqs = [e["seq"] for e in d.events if e["sessionId"] == sid]
        assert seqs == list(range(1, len(seqs) + 1))  # gap-free per session
    msgs_a = d.call("getMessages", {"sessionId": a})["messages"]
    assert msgs_a[0]["content"] == "to a" and len(msgs_a) == 2
    assert d.call("getState")["sessionId"] == b  # the newest is current
    missing = d.request("getState", {"sessionId": "nope"})["error"]
    assert missing["code"] == -32002 and "nope" in missing["message"]


def test_prompt_with_images(spawn):
    d = spawn("--model", "faux/echo")
    d.call("prompt", {"text": "what is this", "images": [{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]})
    d.wait_event("agent_settled")
    user = d.call("getMessages")["messages"][0]
    assert user["content"] == [{"type": "text", "text": "what is this"},
                               {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}]
