"""The model a user chooses is remembered as their default (issue #38 item 2), and the daemon's
texts about choosing a model point at the client's own picker (item 6), through the daemon."""

import json

from loopback import LoopbackServer, Reply, openai_text
from run_events import final_message


def settings_of(home):
    return json.loads((home / "settings.json").read_text())


def test_the_chosen_model_is_the_default_for_new_sessions_and_the_next_start(spawn, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"compaction": {"enabled": False}, "theme": "kept"}))
    workspace = tmp_path / "ws"
    (workspace / ".pi").mkdir(parents=True)
    shipped = json.dumps({"defaultProvider": "faux", "defaultModel": "echo"})
    (workspace / ".pi" / "settings.json").write_text(shipped)  # a repository cannot choose the model
    d = spawn("--trust-workspace", cwd=str(workspace), env={"PI_DAEMON_HOME": str(home)})
    assert d.call("getState")["model"] is None  # no usable model: none chosen yet
    d.call("setModel", {"provider": "faux", "modelId": "echo"})
    assert settings_of(home) == {"compaction": {"enabled": False}, "theme": "kept",
                                 "defaultProvider": "faux", "defaultModel": "echo"}
    d.call("session/new")
    assert d.call("getState")["model"]["id"] == "echo"  # a new session, without asking again

    assert (workspace / ".pi" / "settings.json").read_text() == shipped  # only the user's own file is written
    later = spawn(env={"PI_DAEMON_HOME": str(home)})
    assert later.call("getState")["model"]["id"] == "echo"
    later.call("prompt", {"text": "remembered"})
    assert "remembered" in final_message(later)["content"][-1]["text"]


def test_remember_false_and_an_explicit_model_leave_the_default_alone(spawn, tmp_path):
    server = LoopbackServer()
    try:
        server.routes["/v1/models"] = Reply(200, b'{"object": "list", "data": [{"id": "m1"}, {"id": "m2"}]}',
                                            "application/json")
        home = tmp_path / "home"
        home.mkdir()
        (home / "models.json").write_text(json.dumps({"providers": {"desk": {
            "baseUrl": server.url + "/v1", "api": "openai-completions", "models": []}}}))
        d = spawn(env={"PI_DAEMON_HOME": str(home)})
        assert d.call("getState")["model"]["id"] == "m1"  # the first usable one
        d.call("setModel", {"provider": "desk", "modelId": "m2"})
        d.call("setModel", {"provider": "faux", "modelId": "echo", "remember": False})
        assert (settings_of(home)["defaultProvider"], settings_of(home)["defaultModel"]) == ("desk", "m2")
        d.call("session/new")
        assert d.call("getState")["model"]["id"] == "m2"
        assert spawn(env={"PI_DAEMON_HOME": str(home)}).call("getState")["model"]["id"] == "m2"
        pinned = spawn("--model", "faux/echo", env={"PI_DAEMON_HOME": str(home)})
        assert pinned.call("getState")["model"]["id"] == "echo"  # --model wins
        server.script(Reply(body=openai_text("from m2")))
        d.call("prompt", {"text": "hi"})
        assert final_message(d)["content"][-1]["text"] == "from m2"
    finally:
        server.close()


def test_a_remembered_model_that_is_not_usable_at_start_falls_back(spawn, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text(json.dumps({"defaultProvider": "anthropic",
                                                    "defaultModel": "claude-haiku-4-5"}))
    d = spawn(env={"PI_DAEMON_HOME": str(home)})  # no key: not usable
    assert d.call("getState")["model"] is None
    unavailable = {u["provider"]: u for u in d.call("listModels")["unavailable"]}
    assert "ANTHROPIC_API_KEY" in unavailable["anthropic"]["reason"]
    keyed = spawn(env={"PI_DAEMON_HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-env"})
    assert keyed.call("getState")["model"]["id"] == "claude-haiku-4-5"
    (home / "settings.json").write_text(json.dumps({"defaultProvider": "faux", "defaultModel": "gone"}))
    assert spawn(env={"PI_DAEMON_HOME": str(home)}).call("getState")["model"] is None
    assert b"Traceback" not in d.stderr


def test_the_demo_and_the_no_model_error_point_at_the_clients_picker(spawn):
    d = spawn()
    d.call("initialize", {"protocolVersion": 1, "clientInfo": {
        "name": "nvim", "modelPicker": ":PiModel\x1b[31m\u202e" + "x" * 300}})
    error = d.request("prompt", {"text": "hi"})["error"]
    assert error["data"] == {"reason": "noModel"}
    assert error["message"].startswith("no model is selected: choose one with :PiModel")
    assert "--model" not in error["message"] and "\x1b" not in error["message"] and "\u202e" not in error["message"]
    assert len(error["message"]) < 260  # the phrase is cut at 200 characters
    d.call("setModel", {"provider": "faux", "modelId": "echo"})
    d.call("prompt", {"text": "hello"})
    said = final_message(d)["content"][-1]["text"]
    assert "choose one with :PiModel" in said and "--model" not in said

    shell = spawn()  # a client that names no picker (a shell pipe) is told the command line's way
    assert "pass --model provider/id" in shell.request("prompt", {"text": "hi"})["error"]["message"]
    shell.call("setModel", {"provider": "faux", "modelId": "echo"})
    shell.call("prompt", {"text": "hello"})
    assert "pass --model provider/id" in final_message(shell)["content"][-1]["text"]

