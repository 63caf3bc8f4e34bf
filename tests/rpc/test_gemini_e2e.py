"""The built-in Gemini models through the daemon, against a loopback server that streams
``streamGenerateContent?alt=sse`` chunks as Google documents them."""

import json

import pytest

from run_events import events, final_message
from loopback import LoopbackServer, Reply
from wire_gemini import chunk, error_body, sse, text_reply, usage


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def gemini_via(tmp_path, server, **env):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "models.json").write_text(json.dumps({"providers": {"google": {"baseUrl": server.url + "/v1beta"}}}))
    return dict(env={"GEMINI_API_KEY": "AIza-loop-key", "PI_DAEMON_HOME": str(home), **env}, cwd=str(tmp_path))


def test_thoughts_text_usage_and_cost(spawn, tmp_path, server):
    server.script(Reply(body=sse([
        chunk([{"text": "**Weighing the question**\n\nThe user wants", "thought": True}]),
        chunk([{"text": " a number.", "thought": True}]),
        chunk([{"text": "It is ", "thoughtSignature": "CiQB0e2Kb-sig-on-text=="}]),
        chunk([{"text": "42."}], finish="STOP", usage=usage(1200, 6, thoughts=90, cached=200)),
    ])))
    d = spawn("--model", "google/gemini-2.5-flash", **gemini_via(tmp_path, server))
    d.call("setThinkingLevel", {"level": "medium"})
    d.call("prompt", {"text": "the answer?"})
    final = final_message(d)
    thinking, text = final["content"]
    assert thinking["thinking"] == "**Weighing the question**\n\nThe user wants a number."
    assert text == {"type": "text", "text": "It is 42.", "textSignature": "CiQB0e2Kb-sig-on-text=="}
    assert final["api"] == "google-generative-ai" and final["stopReason"] == "stop"
    used = final["usage"]
    assert (used["input"], used["cacheRead"], used["output"]) == (1000, 200, 96)  # thoughts are output
    assert used["cost"]["total"] == pytest.approx((1000 * 0.3 + 200 * 0.03 + 96 * 2.5) / 1e6)
    request = server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    assert request.headers["x-goog-api-key"] == "AIza-loop-key" and "authorization" not in request.headers
    body = request.body
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
    assert body["contents"] == [{"role": "user", "parts": [{"text": "the answer?"}]}]
    assert str(tmp_path) in body["systemInstruction"]["parts"][0]["text"]  # the system prompt names the workspace
    declared = body["tools"][0]["functionDeclarations"]
    assert declared[0]["name"] == "read" and declared[0]["parametersJsonSchema"]["type"] == "object"


def test_function_call_round_trip_keeps_the_thought_signature(spawn, tmp_path, server):
    (tmp_path / "notes.txt").write_text("buy oats")
    server.script(
        Reply(body=sse([
            chunk([{"text": "I will read the file.", "thought": True, "thoughtSignature": "EhsKGQ-thought-sig"}]),
            chunk([{"functionCall": {"name": "read", "args": {"path": "notes.txt"}},
                    "thoughtSignature": "CsIBAdHtim-call-sig=="}], finish="STOP", usage=usage(400, 12)),
        ])),
        text_reply("Your notes say: buy oats."),
    )
    d = spawn("--model", "google/gemini-3.1-pro-preview", **gemini_via(tmp_path, server))
    d.call("setThinkingLevel", {"level": "high"})
    d.call("prompt", {"text": "notes?"})
    assert final_message(d)["content"][-1]["text"] == "Your notes say: buy oats."
    first = events(d, "message_end")[1]["message"]
    call = first["content"][1]
    assert first["stopReason"] == "toolUse" and call["name"] == "read" and call["arguments"] == {"path": "notes.txt"}
    assert call["thoughtSignature"] == "CsIBAdHtim-call-sig=="
    second = server.requests[1].body
    assert second["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingLevel": "high"}
    model_turn, results = second["contents"][-2:]
    assert model_turn == {"role": "model", "parts": [
        {"text": "I will read the file.", "thought": True, "thoughtSignature": "EhsKGQ-thought-sig"},
        {"functionCall": {"name": "read", "args": {"path": "notes.txt"}}, "thoughtSignature": "CsIBAdHtim-call-sig=="}]}
    [response] = results["parts"]
    assert results["role"] == "user" and response["functionResponse"]["name"] == "read"
    assert "buy oats" in response["functionResponse"]["response"]["output"]


def test_safety_and_output_limit_finish_reasons(spawn, tmp_path, server):
    server.script(text_reply("partial answ", finish="MAX_TOKENS"),
                  Reply(body=sse([chunk([{"text": "I can"}]), chunk([], finish="SAFETY")])),
                  Reply(body=sse([{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
                                   "usageMetadata": usage(20, 0), "modelVersion": "gemini-test"}])))
    d = spawn("--model", "google/gemini-2.5-flash", **gemini_via(tmp_path, server))
    d.call("prompt", {"text": "one"})
    assert final_message(d)["stopReason"] == "length"
    d.call("prompt", {"text": "two"})
    final = final_message(d, 2)
    assert final["stopReason"] == "error" and final["errorMessage"] == "the provider stopped the answer: finishReason SAFETY"
    d.call("prompt", {"text": "three"})
    assert final_message(d, 3)["errorMessage"] == "the provider blocked the prompt: PROHIBITED_CONTENT"
    assert "auto_retry_start" not in d.event_types()


def test_overloaded_and_rate_limited_are_retried_and_overflow_is_not(spawn, tmp_path, server):
    server.script(error_body(503, "The model is overloaded. Please try again later.", "UNAVAILABLE"),
                  error_body(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED"),
                  text_reply("finally"),
                  error_body(400, "The input token count (1150000) exceeds the maximum number of tokens allowed "
                                  "(1048576).", "INVALID_ARGUMENT"))
    d = spawn("--model", "google/gemini-2.5-pro", **gemini_via(tmp_path, server))
    d.call("setAutoRetry", {"baseDelayMs": 5})
    d.call("prompt", {"text": "go"})
    assert final_message(d)["content"][-1]["text"] == "finally"
    assert [s["errorMessage"] for s in events(d, "auto_retry_start")] == [
        "503 The model is overloaded. Please try again later.", "429 Resource has been exhausted (e.g. check quota)."]
    d.call("prompt", {"text": "huge"})
    final = final_message(d, 2)
    assert final["errorMessage"].startswith("400 The input token count (1150000) exceeds the maximum")
    assert len(events(d, "auto_retry_start")) == 2 and events(d, "compaction_start")[0]["reason"] == "overflow"


def test_abort_mid_stream(spawn, tmp_path, server):
    body = sse([chunk([{"text": "tok "}]) for _ in range(80)] + [chunk([], finish="STOP")])
    server.script(Reply(body=body, piece=80, stall_after=len(body) // 2))
    d = spawn("--model", "google/gemini-2.5-flash", **gemini_via(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 5)
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    final = final_message(d)
    assert final["stopReason"] == "aborted" and final["content"][0]["text"].startswith("tok tok")


def test_the_catalog_lists_gemini_models(spawn, tmp_path, server):
    d = spawn(**gemini_via(tmp_path, server))
    models = {m["id"]: m for m in d.call("listModels")["models"] if m["provider"] == "google"}
    assert models["gemini-2.5-pro"]["contextWindow"] == 1_048_576 and models["gemini-2.5-pro"]["api"] == \
        "google-generative-ai"
    assert models["gemini-4-neon"]["cost"] == {"input": 3, "output": 15, "cacheRead": 0.15, "cacheWrite": 0}
    bare = spawn()
    reasons = {u["provider"]: u["reason"] for u in bare.call("listModels")["unavailable"]}
    assert reasons["google"] == "no API key for google: set the environment variable GEMINI_API_KEY"
