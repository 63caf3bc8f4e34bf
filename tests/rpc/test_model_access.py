"""Managing model access after the first run, through the daemon: which key each provider uses,
a wrong key's refusal marked on the answer (and never retried), a key forgotten, a model
server removed (issue #38 item 1)."""

import json

from loopback import Reply, anthropic_error, openai_text
from run_events import final_message
from test_first_model import error_of, server  # noqa: F401 (server: the fixture)


def provider(result, name):
    return next(p for p in result["providers"] if p["provider"] == name)


def test_a_wrong_key_is_marked_on_the_answer_never_retried_and_shown_until_replaced(spawn, tmp_path, server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    d = spawn("--model", "anthropic/claude-haiku-4-5", env={"PI_DAEMON_HOME": str(home)})
    d.call("setApiKey", {"provider": "anthropic", "key": "sk-ant-wrong-0000"})
    d.call("setAutoRetry", {"enabled": True, "maxAttempts": 3, "baseDelayMs": 10})
    server.script(anthropic_error(401, "authentication_error", "invalid x-api-key"),
                  anthropic_error(401, "authentication_error", "invalid x-api-key"))
    d.call("prompt", {"text": "hi"})
    final = final_message(d)
    assert final["stopReason"] == "error" and "invalid x-api-key" in final["errorMessage"]
    assert final["errorKind"] == "auth" and final["errorProvider"] == "anthropic"
    assert "auto_retry_start" not in d.event_types() and len(server.requests) == 1  # a wrong key stays wrong
    stored = d.call("getMessages")["messages"][-1]
    assert stored["errorKind"] == "auth" and stored["errorProvider"] == "anthropic"

    shown = provider(d.call("modelAccess"), "anthropic")
    assert shown["kind"] == "hosted" and shown["key"] == "client" and shown["keyVariable"] == "ANTHROPIC_API_KEY"
    assert shown["lastError"].startswith("401") and "invalid x-api-key" in shown["lastError"]
    assert shown["models"] > 0 and "reason" not in shown

    d.call("setApiKey", {"provider": "anthropic", "key": "sk-ant-right-1111"})
    assert "lastError" not in provider(d.call("modelAccess"), "anthropic")  # the new key has not been refused


def test_a_refused_answer_keeps_its_mark_when_the_session_is_reopened(spawn, tmp_path, server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    env = {"PI_DAEMON_HOME": str(home)}
    d = spawn("--model", "anthropic/claude-haiku-4-5", env=env)
    d.call("setApiKey", {"provider": "anthropic", "key": "sk-ant-wrong-0000"})
    session_id = d.call("session/new", {})["sessionId"]
    server.script(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["errorKind"] == "auth"
    d.close()

    again = spawn("--model", "anthropic/claude-haiku-4-5", env=env)  # the editor reopens the session
    again.call("session/load", {"sessionId": session_id, "replay": True})
    again.wait_event("replay_end")
    shown = [e["event"]["message"] for e in again.events if e["event"]["type"] in ("message_start", "message_end")]
    assert [m["role"] for m in shown] == ["user", "user", "assistant", "assistant"]
    assert all(m["errorKind"] == "auth" and m["errorProvider"] == "anthropic" for m in shown[2:])
    stored = again.call("getMessages")["messages"][-1]
    assert stored["errorKind"] == "auth" and stored["errorProvider"] == "anthropic"


def test_a_key_handed_over_can_be_removed_and_the_environment_still_wins(spawn, tmp_path):
    d = spawn()
    before = d.call("modelAccess")["providers"]
    assert [p["kind"] for p in before][-1] == "builtin" and before[-1]["provider"] == "faux"
    assert {p["provider"] for p in before if p["kind"] == "hosted"} == {"anthropic", "google", "openai",
                                                                         "openrouter"}
    assert provider({"providers": before}, "openai")["key"] == "none"
    assert provider({"providers": before}, "openai")["models"] == 0
    assert "OPENAI_API_KEY" in provider({"providers": before}, "openai")["reason"]

    d.call("setApiKey", {"provider": "openai", "key": "sk-openai-1234"})
    given = provider(d.call("modelAccess"), "openai")
    assert given["key"] == "client" and given["models"] > 0
    removed = provider(d.call("removeApiKey", {"provider": "openai"}), "openai")
    assert removed["key"] == "none" and removed["models"] == 0
    assert not any(m["provider"] == "openai" for m in d.call("listModels")["models"])
    assert error_of(d, "removeApiKey", {"provider": "faux"})["code"] == -32602
    assert error_of(d, "removeApiKey", {"provider": "desk"})["code"] == -32602

    with_env = spawn(env={"GEMINI_API_KEY": "from-the-environment"})
    with_env.call("setApiKey", {"provider": "google", "key": "handed-over"})
    assert provider(with_env.call("removeApiKey", {"provider": "google"}), "google")["key"] == "environment"
    assert any(m["provider"] == "google" for m in with_env.call("listModels")["models"])


def test_a_model_server_can_be_removed_from_the_users_models_json(spawn, tmp_path, server):
    server.routes["/v1/models"] = Reply(200, b'{"object": "list", "data": [{"id": "qwen-coder"}]}',
                                        "application/json")
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"providers": {"kept": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": [{"id": "k"}]}}}))
    workspace = tmp_path / "ws"
    (workspace / ".pi").mkdir(parents=True)
    (workspace / ".pi" / "models.json").write_text(json.dumps({"providers": {"repo-server": {
        "baseUrl": "http://127.0.0.1:9/v2", "api": "openai-completions", "models": [{"id": "r"}]}}}))
    d = spawn(cwd=str(workspace), env={"PI_DAEMON_HOME": str(home)})
    d.call("addModelServer", {"name": "desk", "baseUrl": server.url + "/v1"})
    access = d.call("modelAccess")
    desk = provider(access, "desk")
    assert desk == {"provider": "desk", "kind": "server", "models": 1, "removable": True,
                    "baseUrl": server.url + "/v1"}
    assert provider(access, "kept")["removable"] is True
    assert provider(access, "repo-server")["removable"] is False  # the workspace's own: not the user's to remove here
    d.call("setModel", {"provider": "desk", "modelId": "qwen-coder"})
    server.script(Reply(body=openai_text("still here")))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "still here"

    after = d.call("removeModelServer", {"name": "desk"})
    assert not any(p["provider"] == "desk" for p in after["providers"])
    written = json.loads((home / "models.json").read_text())["providers"]
    assert "desk" not in written and written["kept"]["models"] == [{"id": "k"}]  # the rest is as it was
    assert not any(m["provider"] == "desk" for m in d.call("listModels")["models"])
    d.call("session/new")
    assert d.call("getState")["model"]["provider"] == "kept"  # the removed default: the first usable one again
    for name in ("desk", "anthropic", "repo-server", "faux"):
        refused = error_of(d, "removeModelServer", {"name": name})
        assert refused["code"] == -32602 and "params.name" in refused["message"]
    assert json.loads((home / "models.json").read_text())["providers"] == written
