"""A first run without a usable model, through the daemon: the refusal says what is missing,
and each way out works — a key handed over (held in memory, sent only where its provider's
key goes), a local server found on a port and added, the offline demo."""

import json
import time

import pytest

from agent_shell import home_with
from helpers import wait_until
from loopback import LoopbackServer, Reply, TricklingServers, anthropic_message, openai_text
from run_events import final_message


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def error_of(d, method, params):
    response = d.request(method, params)
    assert "error" in response, response
    return response["error"]


def test_a_prompt_without_a_model_is_refused_with_a_reason_and_the_demo_answers_after(spawn, tmp_path):
    d = spawn()
    error = error_of(d, "prompt", {"text": "hello there"})
    assert error["code"] == -32004 and error["data"] == {"reason": "noModel"}
    assert d.call("getMessages")["messages"] == []  # nothing stored: the client keeps the text
    d.call("setModel", {"provider": "faux", "modelId": "echo"})
    d.call("prompt", {"text": "hello there"})
    assert "hello there" in final_message(d)["content"][-1]["text"]


def test_a_missing_key_is_named_and_a_key_handed_over_is_used_only_for_its_provider(spawn, tmp_path, server):
    home = tmp_path / "home"
    home_with(tmp_path, {"sandbox": {"enabled": False}})
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    d = spawn("--model", "anthropic/claude-haiku-4-5", "--allow", "bash", env={"PI_DAEMON_HOME": str(home)})
    error = error_of(d, "prompt", {"text": "hi"})
    assert error["code"] == -32004
    assert error["data"] == {"reason": "missingKey", "provider": "anthropic", "envVar": "ANTHROPIC_API_KEY"}

    key = "sk-ant-handed-over-1234"
    models = d.call("setApiKey", {"provider": "anthropic", "key": key})["models"]
    assert {m["id"] for m in models} >= {"claude-haiku-4-5"} and all(m["available"] for m in models)
    server.script(Reply(body=anthropic_message([{"start": {"type": "tool_use", "id": "t1", "name": "bash", "input": {}},
                                                 "deltas": [{"type": "input_json_delta",
                                                             "partial_json": '{"command": "env"}'}]}],
                                               stop_reason="tool_use")),
                  Reply(body=anthropic_message([{"start": {"type": "text", "text": ""},
                                                 "deltas": [{"type": "text_delta", "text": "done"}]}])))
    d.call("prompt", {"text": "show the environment"})
    assert final_message(d)["content"][-1]["text"] == "done"
    assert server.requests[0].headers["x-api-key"] == key
    # held by the daemon, not put in the environment its commands inherit (the sandbox is off here)
    output = next(e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end")
    assert key not in json.dumps(output) and "ANTHROPIC_API_KEY" not in json.dumps(output)


def test_a_key_is_refused_for_a_provider_that_takes_none_and_when_malformed(spawn, tmp_path):
    d = spawn()
    assert error_of(d, "setApiKey", {"provider": "faux", "key": "x"})["code"] == -32602
    bad = error_of(d, "setApiKey", {"provider": "openai", "key": "two words"})
    assert bad["code"] == -32602 and "params.key" in bad["message"]
    assert error_of(d, "setApiKey", {"provider": "openai"})["code"] == -32602
    assert d.call("listModels")["models"]  # still serving


def test_a_local_server_is_found_added_and_answers(spawn, tmp_path, server):
    server.routes["/v1/models"] = Reply(200, b'{"object": "list", "data": [{"id": "qwen-coder", "object": "model"}]}',
                                        "application/json")
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"providers": {"kept": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": [{"id": "k"}]}}}))
    d = spawn(env={"PI_DAEMON_HOME": str(home)})
    found = d.call("probeLocalServers", {"urls": [server.url + "/v1"]})["servers"]
    mine = [s for s in found if s["baseUrl"] == server.url + "/v1"]
    assert mine == [{"name": f"127.0.0.1-{server.url.rsplit(':', 1)[1]}", "baseUrl": server.url + "/v1",
                     "models": ["qwen-coder"]}]

    models = d.call("addModelServer", {"name": "desk", "baseUrl": server.url + "/v1"})["models"]
    assert [m["id"] for m in models] == ["qwen-coder"]
    written = json.loads((home / "models.json").read_text())["providers"]
    assert written["desk"] == {"api": "openai-completions", "baseUrl": server.url + "/v1", "models": []}
    assert written["kept"]["models"] == [{"id": "k"}]  # the rest of the file is as it was
    d.call("setModel", {"provider": "desk", "modelId": "qwen-coder"})
    server.script(Reply(body=openai_text("from the desk server")))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "from the desk server"
    # a daemon started later has it too
    later = spawn(env={"PI_DAEMON_HOME": str(home)})
    assert any(m["provider"] == "desk" for m in later.call("listModels")["models"])


def test_servers_that_cannot_be_added_are_clear_errors(spawn, tmp_path):
    d = spawn()
    assert "not an http(s) URL" in error_of(d, "addModelServer", {"name": "x", "baseUrl": "file:///etc"})["message"]
    assert "built-in" in error_of(d, "addModelServer", {"name": "anthropic", "baseUrl": "http://127.0.0.1:9"})["message"]
    down = error_of(d, "addModelServer", {"name": "down", "baseUrl": "http://127.0.0.1:9/v1"})
    assert down["code"] == -32004 and "127.0.0.1:9" in down["message"]
    assert error_of(d, "probeLocalServers", {"urls": ["nope"]})["code"] == -32602
    found = d.call("probeLocalServers", {"urls": ["http://127.0.0.1:9/v1"]})["servers"]
    assert all(s["baseUrl"] != "http://127.0.0.1:9/v1" for s in found)  # nothing answers there


def test_servers_that_trickle_are_given_up_at_one_deadline_while_the_daemon_keeps_serving(spawn, tmp_path):
    # On free ports, named in the request: the usual ports (asked too) belong to whatever else runs here.
    trickling = TricklingServers()
    try:
        urls = [trickling.url + "/v1"] + [trickling.listen() + "/v1" for _ in range(15)]
        d = spawn()
        d.call("session/list")
        asked = time.monotonic()
        probe = d.request_async("probeLocalServers", {"urls": urls})
        wait_until(lambda: trickling.opened, "the probe to reach a trickling server")
        d.call("session/list")
        assert probe not in d.responses  # answered while the probe goes on: it holds none of the daemon's threads
        result = d.wait_response(probe, timeout=30)["result"]
        assert time.monotonic() - asked < 20  # one deadline (3 s; bench/hostile_sizes.py has the figure), not 60 s
        assert not {s["baseUrl"] for s in result["servers"]} & set(urls)
        assert set(urls) <= set(result["timedOut"])
        wait_until(lambda: trickling.closed == trickling.opened == len(urls),
                   "the daemon to close every connection it gave up")
    finally:
        trickling.close()
