"""openai-completions against the quirks of real local servers (llama.cpp, Ollama, vLLM,
LM Studio), through the daemon: tool-call deltas with late or repeated ids and no index,
arguments split mid-token, reasoning_content, usage from a final chunk, from llama.cpp's
timings or not at all, finish_reason stop with tool calls, no finish reason, an error
event after HTTP 200, llama.cpp's context-size error."""

import json

import pytest

from run_events import events, final_message
from loopback import LoopbackServer, Reply, openai_chunk, openai_sse, openai_text
from client import user_models


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def workspace(tmp_path, server, **compat) -> str:
    model = {"id": "local", "contextWindow": 8192, "maxTokens": 1024, "reasoning": True,
             "cost": {"input": 1, "output": 2}}
    if compat:
        model["compat"] = compat
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, {"providers": {"llama": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": [model]}}})


def test_tool_call_deltas_with_late_or_repeated_ids_and_no_index(spawn, tmp_path, server):
    (tmp_path / "a.txt").write_text("alpha")
    (tmp_path / "b.txt").write_text("beta")
    chunks = [
        # llama.cpp: the first delta has the index and name, the id only in the next one
        openai_chunk({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "read", "arguments": ""}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "id": "call_late", "function": {"arguments": '{"pa'}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "a.t'}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'xt"}'}}]}),
        # Ollama-like: no index, the same id and name repeated on every delta
        openai_chunk({"tool_calls": [{"id": "call_rep", "type": "function",
                                      "function": {"name": "read", "arguments": '{"path": '}}]}),
        openai_chunk({"tool_calls": [{"id": "call_rep", "type": "function",
                                      "function": {"name": "read", "arguments": '"b.txt"}'}}]}),
        openai_chunk({}, "stop"),  # "stop" although it called tools
    ]
    server.script(Reply(body=openai_sse(chunks), piece=3), Reply(body=openai_text("alpha and beta")))
    d = spawn("--model", "llama/local", cwd=workspace(tmp_path, server))
    d.call("prompt", {"text": "read both"})
    assert final_message(d)["content"][-1]["text"] == "alpha and beta"
    calls = events(d, "message_end")[1]["message"]
    assert calls["stopReason"] == "toolUse"
    assert [(c["id"], c["name"], c["arguments"]) for c in calls["content"]] == [
        ("call_late", "read", {"path": "a.txt"}), ("call_rep", "read", {"path": "b.txt"})]
    results = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [(r["tool_call_id"], "alpha" in r["content"], "beta" in r["content"]) for r in results] == [
        ("call_late", True, False), ("call_rep", False, True)]


def test_reasoning_content_and_llama_cpp_timings_as_usage(spawn, tmp_path, server):
    chunks = [openai_chunk({"role": "assistant", "content": None, "reasoning_content": "The user "}),
              openai_chunk({"reasoning_content": "says hi."}),
              openai_chunk({"content": "Hello!"}),
              {**openai_chunk({}, "stop"), "timings": {"cache_n": 10, "prompt_n": 40, "prompt_ms": 80.1,
                                                       "predicted_n": 7, "predicted_ms": 120.5}}]
    server.script(Reply(body=openai_sse(chunks)))
    d = spawn("--model", "llama/local", cwd=workspace(tmp_path, server, supportsUsageInStreaming=False))
    d.call("prompt", {"text": "hi"})
    final = final_message(d)
    assert [b["type"] for b in final["content"]] == ["thinking", "text"]
    assert final["content"][0]["thinking"] == "The user says hi." and final["content"][1]["text"] == "Hello!"
    used = final["usage"]
    assert (used["input"], used["cacheRead"], used["output"]) == (40, 10, 7)
    assert used["cost"]["total"] == pytest.approx((40 * 1 + 7 * 2) / 1e6)
    assert "stream_options" not in server.requests[0].body


def test_no_usage_and_no_finish_reason_when_the_server_says_it_sends_none(spawn, tmp_path, server):
    server.script(Reply(body=openai_sse([openai_chunk({"content": "bare answer"})])),
                  Reply(body=openai_sse([openai_chunk({"content": "cut"})])))
    d = spawn("--model", "llama/local", cwd=workspace(tmp_path, server, supportsFinishReason=False))
    d.call("prompt", {"text": "hi"})
    final = final_message(d)
    assert final["stopReason"] == "stop" and final["content"][-1]["text"] == "bare answer"
    assert final["usage"]["totalTokens"] == 0 and final["usage"]["cost"]["total"] == 0
    plain = spawn("--model", "llama/local", cwd=workspace(tmp_path, server))  # one that should say
    plain.call("setAutoRetry", {"enabled": False})
    plain.call("prompt", {"text": "hi"})
    assert final_message(plain)["errorMessage"] == ("the stream ended without a finish reason "
                                                    "(the answer may be incomplete)")


def test_an_error_event_after_http_200_is_retried_or_compacted_by_what_it_says(spawn, tmp_path, server):
    loading = b'data: {"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}\n\n'
    server.script(Reply(body=openai_sse([openai_chunk({"content": "par"})], done=False) + loading),
                  Reply(body=openai_text("loaded now")))
    d = spawn("--model", "llama/local", cwd=workspace(tmp_path, server))
    d.call("setAutoRetry", {"baseDelayMs": 5})
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "loaded now"
    assert [s["errorMessage"] for s in events(d, "auto_retry_start")] == ["Loading model"]
    failed = d.call("getMessages")["messages"][1]
    assert failed["stopReason"] == "error" and failed["content"][0]["text"] == "par"  # what arrived is kept
    too_big = json.dumps({"error": {"code": 400, "message": "the request exceeds the available context size, try "
                                    "increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000,
                                    "n_ctx": 8192}}).encode()
    server.script(Reply(400, too_big, "application/json"))
    d.call("prompt", {"text": "a lot"})
    final = final_message(d, 2)
    assert final["errorMessage"] == "400 the request exceeds the available context size, try increasing it"
    assert len(events(d, "auto_retry_start")) == 1 and events(d, "compaction_start")[-1]["reason"] == "overflow"


def test_thinking_formats_of_local_servers(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("q")), Reply(body=openai_text("d")))
    d = spawn("--model", "llama/local", cwd=workspace(tmp_path, server, thinkingFormat="qwen-chat-template",
                                                       thinkingTokenBudgetField="thinking_budget_tokens"))
    d.call("setThinkingLevel", {"level": "medium"})
    d.call("prompt", {"text": "hi"})
    final_message(d)
    body = server.requests[0].body
    assert body["chat_template_kwargs"] == {"enable_thinking": True, "preserve_thinking": True}
    assert body["thinking_budget_tokens"] == 8192 and "reasoning_effort" not in body
    d.call("setThinkingLevel", {"level": "off"})
    d.call("prompt", {"text": "again"})
    final_message(d, 2)
    assert server.requests[1].body["chat_template_kwargs"]["enable_thinking"] is False
