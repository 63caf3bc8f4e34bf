"""The built-in OpenAI models over the Responses API, through the daemon, against a loopback
server that streams the documented events."""

import json

import pytest

from run_events import events, final_message
from loopback import LoopbackServer, Reply
from wire_responses import (error_body, function_call_item, message_item, reasoning_item, response, sse,
                            response_object, text_reply, usage)


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def openai_via(tmp_path, server, *args, **env):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "models.json").write_text(json.dumps({"providers": {"openai": {"baseUrl": server.url + "/v1"}}}))
    return dict(env={"OPENAI_API_KEY": "sk-openai-loop", "PI_DAEMON_HOME": str(home), **env}, cwd=str(tmp_path))


def test_reasoning_summary_text_and_usage_with_cached_and_reasoning_tokens(spawn, tmp_path, server):
    server.script(Reply(body=response([reasoning_item(0, ["Looking at the question.", "It is simple."]),
                                       message_item(1, "The answer is 42.")],
                                      use=usage(1000, 300, cached=200, reasoning=180))))
    d = spawn("--model", "openai/gpt-5", **openai_via(tmp_path, server))
    d.call("setThinkingLevel", {"level": "high"})
    d.call("prompt", {"text": "what is the answer?"})
    final = final_message(d)
    thinking, text = final["content"]
    assert thinking["type"] == "thinking" and thinking["thinking"] == "Looking at the question.\n\nIt is simple."
    assert text == {"type": "text", "text": "The answer is 42.", "textSignature": "msg_0001"}
    assert final["api"] == "openai-responses" and final["stopReason"] == "stop"
    used = final["usage"]
    assert (used["input"], used["cacheRead"], used["output"]) == (800, 200, 300)  # output counts the reasoning
    assert used["cost"]["total"] == pytest.approx((800 * 1.25 + 200 * 0.125 + 300 * 10) / 1e6)
    assert any(e["assistantMessageEvent"]["type"] == "thinking_delta" for e in events(d, "message_update"))
    request = server.requests[0]
    assert request.path == "/v1/responses" and request.headers["authorization"] == "Bearer sk-openai-loop"
    body = request.body
    assert body["store"] is False and body["stream"] is True and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "high", "summary": "auto"} and body["max_output_tokens"] == 128000
    assert body["input"][0]["role"] == "developer" and body["input"][-1] == {
        "role": "user", "content": [{"type": "input_text", "text": "what is the answer?"}]}
    assert [t["name"] for t in body["tools"]][:2] == ["read", "write"] and body["tools"][0]["type"] == "function"


def test_tool_call_round_trip_sends_the_encrypted_reasoning_back(spawn, tmp_path, server):
    (tmp_path / "notes.txt").write_text("remember the milk")
    reasoning = reasoning_item(0, ["I should read the notes."], encrypted="gAAAAABo-opaque-reasoning==")
    call = function_call_item(1, "call_Xy12", "read", {"path": "notes.txt"})
    server.script(Reply(body=response([reasoning, call], use=usage(500, 40))),
                  text_reply("The notes say: remember the milk."))
    d = spawn("--model", "openai/gpt-5-mini", **openai_via(tmp_path, server))
    d.call("setThinkingLevel", {"level": "low"})
    d.call("prompt", {"text": "what do my notes say?"})
    assert final_message(d)["content"][-1]["text"] == "The notes say: remember the milk."
    first = events(d, "message_end")[1]["message"]
    assert first["stopReason"] == "toolUse" and first["content"][1]["id"] == "call_Xy12|fc_0001"
    assert first["content"][1]["arguments"] == {"path": "notes.txt"}
    replay = server.requests[1].body["input"]
    assert replay[-3] == reasoning[1]  # the whole reasoning item, encrypted content and all
    assert replay[-2] == {"type": "function_call", "call_id": "call_Xy12", "name": "read",
                          "arguments": '{"path": "notes.txt"}', "id": "fc_0001"}
    assert replay[-1]["type"] == "function_call_output" and replay[-1]["call_id"] == "call_Xy12"
    assert "remember the milk" in replay[-1]["output"]
    assert server.requests[1].body["reasoning"]["effort"] == "low"


def test_output_limit_is_length_and_a_failed_overflow_compacts_instead_of_retrying(spawn, tmp_path, server):
    server.script(Reply(body=response([message_item(0, "cut sho")], status="incomplete",
                                      incomplete_details={"reason": "max_output_tokens"})))
    d = spawn("--model", "openai/gpt-5", **openai_via(tmp_path, server))
    d.call("prompt", {"text": "long essay"})
    assert final_message(d)["stopReason"] == "length"
    failed = sse([{"type": "response.created", "response": response_object("in_progress", [], None)},
                  {"type": "response.failed", "response": response_object("failed", [], None, error={
                      "code": "context_length_exceeded",
                      "message": "Your input exceeds the context window of this model. Please adjust your input and "
                                 "try again."})}])
    server.script(Reply(body=failed))
    d.call("prompt", {"text": "more"})
    final = final_message(d, 2)
    assert final["stopReason"] == "error" and final["errorMessage"].startswith("context_length_exceeded: Your input")
    assert "auto_retry_start" not in d.event_types()
    assert events(d, "compaction_start")[0]["reason"] == "overflow"


def test_429_and_an_error_event_mid_stream_are_retried(spawn, tmp_path, server):
    mid_stream_error = sse([{"type": "response.created", "response": response_object("in_progress", [], None)},
                            {"type": "error", "code": "server_error", "param": None,
                             "message": "The server had an error while processing your request. Sorry about that!"}])
    server.script(error_body(429, "Rate limit reached for gpt-5 in organization org-x on tokens per min (TPM).",
                             "tokens", "rate_limit_exceeded", headers={"retry-after-ms": "10"}),
                  Reply(body=mid_stream_error),
                  text_reply("third time lucky"))
    d = spawn("--model", "openai/gpt-5", **openai_via(tmp_path, server))
    d.call("setAutoRetry", {"baseDelayMs": 5})
    d.call("prompt", {"text": "go"})
    assert final_message(d)["content"][-1]["text"] == "third time lucky"
    starts = events(d, "auto_retry_start")
    assert starts[0]["errorMessage"].startswith("429 Rate limit reached for gpt-5") and starts[0]["delayMs"] == 10
    assert starts[1]["errorMessage"] == ("server_error: The server had an error while processing your request. "
                                         "Sorry about that!")


def test_abort_mid_stream_keeps_what_arrived(spawn, tmp_path, server):
    body = response([message_item(0, "word " * 200, pieces=200)])
    server.script(Reply(body=body, piece=60, stall_after=len(body) // 2))
    d = spawn("--model", "openai/gpt-5", **openai_via(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 5)
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    final = final_message(d)
    assert final["stopReason"] == "aborted" and final["content"][0]["text"].startswith("word word")
    assert "auto_retry_start" not in d.event_types()


def test_the_catalog_lists_current_openai_models_over_the_responses_api(spawn, tmp_path, server):
    d = spawn(**openai_via(tmp_path, server))
    models = {m["id"]: m for m in d.call("listModels")["models"] if m["provider"] == "openai"}
    assert models["gpt-6.2-sol"]["api"] == "openai-responses" and models["gpt-6.2-sol"]["contextWindow"] == 272000
    assert models["gpt-6.2-sol"]["cost"] == {"input": 2, "output": 10, "cacheRead": 0.1, "cacheWrite": 2.5}
    assert models["gpt-5"]["reasoning"] is True and models["gpt-4.1"]["reasoning"] is False
