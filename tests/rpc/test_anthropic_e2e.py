"""The built-in Claude models through the daemon against a loopback Messages API: thinking and
a tool-call round trip with its signature, usage and cost, overflow, abort."""

import json

import pytest

from run_events import events, final_message
from loopback import LoopbackServer, Reply, anthropic_error, anthropic_message


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def claude_via(tmp_path, server):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    return dict(env={"ANTHROPIC_API_KEY": "sk-ant-loop", "PI_DAEMON_HOME": str(home)}, cwd=str(tmp_path))


def test_thinking_and_a_tool_round_trip_with_the_signature_sent_back(spawn, tmp_path, server):
    (tmp_path / "todo.txt").write_text("ship it")
    server.script(
        Reply(body=anthropic_message([
            {"start": {"type": "thinking", "thinking": ""},
             "deltas": [{"type": "thinking_delta", "thinking": "Read the todo."},
                        {"type": "signature_delta", "signature": "ErUBCkYIBxgCIkD-sig"}]},
            {"start": {"type": "tool_use", "id": "toolu_01A", "name": "read", "input": {}},
             "deltas": [{"type": "input_json_delta", "partial_json": '{"path": "to'},
                        {"type": "input_json_delta", "partial_json": 'do.txt"}'}]},
        ], stop_reason="tool_use", input_tokens=900, output_tokens=60, cache_read=5000, cache_write=300)),
        Reply(body=anthropic_message([{"start": {"type": "text", "text": ""},
                                       "deltas": [{"type": "text_delta", "text": "It says: ship it."}]}])),
    )
    d = spawn("--model", "anthropic/claude-sonnet-4-5", **claude_via(tmp_path, server))
    d.call("setThinkingLevel", {"level": "low"})
    d.call("prompt", {"text": "what is on my todo?"})
    assert final_message(d)["content"][-1]["text"] == "It says: ship it."
    first = events(d, "message_end")[1]["message"]
    assert first["stopReason"] == "toolUse" and first["content"][0]["thinkingSignature"] == "ErUBCkYIBxgCIkD-sig"
    used = first["usage"]
    assert used["cost"]["total"] == pytest.approx((900 * 3 + 60 * 15 + 5000 * 0.3 + 300 * 3.75) / 1e6)
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assistant, results = server.requests[1].body["messages"][-2:]
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Read the todo.",
                                       "signature": "ErUBCkYIBxgCIkD-sig"}
    assert assistant["content"][1]["type"] == "tool_use" and assistant["content"][1]["input"] == {"path": "todo.txt"}
    assert results["content"][0]["tool_use_id"] == "toolu_01A" and "ship it" in json.dumps(results["content"][0])


def test_prompt_too_long_is_an_overflow_and_abort_keeps_the_partial_answer(spawn, tmp_path, server):
    server.script(anthropic_error(400, "invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"))
    d = spawn("--model", "anthropic/claude-haiku-4-5", **claude_via(tmp_path, server))
    d.call("prompt", {"text": "huge"})
    final = final_message(d)
    assert final["errorMessage"] == "400 prompt is too long: 212345 tokens > 200000 maximum"
    assert "auto_retry_start" not in d.event_types() and events(d, "compaction_start")[0]["reason"] == "overflow"
    body = anthropic_message([{"start": {"type": "text", "text": ""},
                               "deltas": [{"type": "text_delta", "text": "chunk "}] * 150}])
    server.script(Reply(body=body, piece=80, stall_after=len(body) // 2))
    d.call("prompt", {"text": "stream"})
    d.wait_event("message_update", 5)
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    final = final_message(d, 2)
    assert final["stopReason"] == "aborted" and final["content"][0]["text"].startswith("chunk chunk")
