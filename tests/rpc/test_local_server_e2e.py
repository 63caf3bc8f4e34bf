"""A local model server as llama-server really behaves, through the daemon: keep-alive
connections it has closed, a refused port, a 4,096-token window, a chat template without
tools, a long tool loop with recovered failures, tool calls cut off at the output limit."""

import json
import socket

import pytest

from run_events import events, final_message
from loopback import LoopbackServer, Reply, openai_chunk, openai_sse, openai_text
from client import user_models
from helpers import wait_until


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def workspace(tmp_path, base_url: str, window: int = 32_768) -> str:
    config = {"providers": {"llama": {"baseUrl": base_url, "api": "openai-completions",
                                      "models": [{"id": "smol", "contextWindow": window, "maxTokens": 256}]}}}
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, config)


def read_call(call_id: str, path: str = "notes.txt") -> Reply:
    chunks = [openai_chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                            "function": {"name": "read", "arguments": json.dumps({"path": path})}}]}),
              openai_chunk({}, "tool_calls")]
    return Reply(body=openai_sse(chunks))


def boom() -> Reply:
    return Reply(500, b'{"error":{"code":500,"message":"boom","type":"server_error"}}', "application/json")


def test_each_answered_request_resets_the_retry_count_in_a_long_tool_loop(spawn, tmp_path, server):
    (tmp_path / "notes.txt").write_text("notes")
    server.script(boom(), read_call("r1"), boom(), read_call("r2"), boom(), read_call("r3"), boom(),
                  Reply(body=openai_text("done")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("setAutoRetry", {"baseDelayMs": 5})
    d.call("prompt", {"text": "read the notes three times"})
    assert final_message(d)["content"][-1]["text"] == "done"
    # Every failure after an answer is a first attempt again: the same short wait, and the
    # fourth failure of the run is still retried.
    assert [(s["attempt"], s["delayMs"]) for s in events(d, "auto_retry_start")] == [(1, 5)] * 4
    assert events(d, "auto_retry_end") == [{"type": "auto_retry_end", "success": True, "attempt": 1}] * 4
    assert len(server.requests) == 8


def test_a_kept_alive_connection_the_server_closed_is_retried_at_once_and_stores_nothing(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("first")), Reply(hangup=True), Reply(body=openai_text("second")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("prompt", {"text": "one"})
    assert final_message(d)["content"][-1]["text"] == "first"
    d.call("prompt", {"text": "two"})
    assert final_message(d, 2)["content"][-1]["text"] == "second"
    first, dead, fresh = server.requests
    kept = {first.connection} | {r.connection for r in server.route_hits}  # /props is asked beside the requests
    assert dead.connection in kept and fresh.connection != dead.connection  # a kept one reused, then another
    assert "auto_retry_start" not in d.event_types()
    assert [m["role"] for m in d.call("getMessages")["messages"]] == ["user", "assistant", "user", "assistant"]


def test_a_refused_local_port_names_the_url_and_is_not_retried(spawn, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, f"http://127.0.0.1:{port}/v1"))
    d.call("prompt", {"text": "hello"})
    final = final_message(d)
    assert final["stopReason"] == "error"
    assert final["errorMessage"] == (f"connection refused by http://127.0.0.1:{port}/v1/chat/completions: "
                                     "is the server running?")
    assert "auto_retry_start" not in d.event_types()


def test_threshold_compaction_works_in_a_4096_token_window(spawn, tmp_path, server):
    server.script(
        Reply(body=openai_text("first answer", usage=(3300, 40))),  # near the threshold
        Reply(body=openai_text("## Goal\nsummary of the start")),
        Reply(body=openai_text("answer after compaction")),
    )
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1", window=4096))
    d.call("prompt", {"text": "start " + "a" * 1200})  # with the tools' schemas (~2.7k tokens), under the threshold
    final_message(d)
    d.call("prompt", {"text": "next " + "b" * 1000})
    assert final_message(d, 2)["content"][-1]["text"] == "answer after compaction"
    end = events(d, "compaction_end")[0]
    assert end["reason"] == "threshold" and "errorMessage" not in end, end.get("errorMessage")
    sent = server.requests[2].body["messages"]
    assert "summary of the start" in json.dumps(sent) and "a" * 1200 not in json.dumps(sent)
    assert sent[-1]["content"] == "next " + "b" * 1000  # the newest turn is kept whole


def test_a_chat_template_without_tools_is_warned_about(spawn, tmp_path, server):
    server.routes["/props"] = Reply(200, json.dumps({
        "default_generation_settings": {"n_ctx": 4096}, "total_slots": 1, "model_path": "smollm2.gguf",
        "chat_template": "{{ messages }}", "chat_template_caps": {"supports_tools": False,
                                                                  "supports_tool_calls": False}}).encode(),
        "application/json")
    server.script(Reply(body=openai_text("no tools here")), Reply(body=openai_text("still none")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("prompt", {"text": "hi"})
    final_message(d)
    d.call("prompt", {"text": "again"})
    final_message(d, 2)
    d.wait_stderr(b"has no tool support")  # asked beside the first request: the warning may come after its answer
    stderr = d.stderr.decode()
    assert f"the model server at {server.url}/v1 reports that its chat template has no tool support" in stderr
    assert "--jinja" in stderr and stderr.count("has no tool support") == 1  # once per server
    assert [r.path for r in server.route_hits] == ["/props"]


def test_a_template_with_tools_is_not_warned_about(spawn, tmp_path, server):
    server.routes["/props"] = Reply(200, b'{"chat_template_caps": {"supports_tools": true}}', "application/json")
    server.script(Reply(body=openai_text("fine")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("prompt", {"text": "hi"})
    final_message(d)
    wait_until(lambda: server.route_hits, "the /props probe")
    assert "tool support" not in d.stderr.decode() and len(server.route_hits) == 1


def test_the_model_is_asked_beside_the_props_probe_not_after_it(spawn, tmp_path, server):
    """``/props`` only decides a warning: a server slow to answer it (here it never sends the
    body, and the probe gives up after its 2 s) does not hold the first request back."""
    server.routes["/props"] = Reply(200, b'{"chat_template_caps": {}}', stall_after=0)
    server.script(Reply(body=openai_text("at once")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "at once"
    wait_until(lambda: server.route_hits and server.route_hits[0].closed_at, "the stalled /props given up")
    assert server.requests[0].received_at < server.route_hits[0].closed_at


def test_arguments_cut_off_at_the_output_limit_are_shown_to_the_model(spawn, tmp_path, server):
    cut = '{"path": "src/very/long/na'
    chunks = [openai_chunk({"tool_calls": [{"index": 0, "id": "w1", "type": "function",
                                            "function": {"name": "write", "arguments": ""}}]}),
              openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": cut}}]}),
              openai_chunk({}, "length")]
    server.script(Reply(body=openai_sse(chunks)), Reply(body=openai_text("I will write it in parts.")))
    d = spawn("--model", "llama/smol", cwd=workspace(tmp_path, server.url + "/v1"))
    d.call("prompt", {"text": "write a long file"})
    assert final_message(d)["content"][-1]["text"] == "I will write it in parts."
    result = next(m for m in server.requests[1].body["messages"] if m["role"] == "tool")
    assert result["tool_call_id"] == "w1"
    assert "cut off at the output token limit" in result["content"] and cut in result["content"]
    assert not (tmp_path / "src").exists()
