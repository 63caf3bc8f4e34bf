"""The daemon driven end to end through models.json against the loopback model server."""

import json

import pytest

from client import user_models
from loopback import (LoopbackServer, Reply, anthropic_error, anthropic_message, openai_chunk, openai_error,
                      openai_sse, openai_text)


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def workspace_with(tmp_path, server, **provider) -> str:
    config = {"providers": {"local": {"baseUrl": server.url + "/v1", "api": "openai-completions",
                                      "models": [{"id": "coder", "contextWindow": 4096, "maxTokens": 512,
                                                  "cost": {"input": 1, "output": 2}}], **provider}}}
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, config)


def settled_message(d, count=1):
    d.wait_event("agent_settled", count, timeout=20)
    return [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]


def test_prompt_streams_from_an_openai_compatible_server(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("Streaming from loopback.", pieces=5, usage=(300, 20))))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    assert any(m["id"] == "coder" and m["available"] for m in d.call("listModels")["models"])
    d.call("prompt", {"text": "hello"})
    final = settled_message(d)
    assert final["content"][-1]["text"] == "Streaming from loopback." == d.texts()
    assert final["usage"]["input"] == 300 and final["usage"]["cost"]["total"] == pytest.approx((300 + 40) / 1e6)
    assert server.requests[0].body["messages"][-1] == {"role": "user", "content": "hello"}


def test_429_then_success_is_retried(spawn, tmp_path, server):
    server.script(openai_error(429, "Rate limit reached", headers={"retry-after": "0"}),
                  Reply(body=openai_text("after the wait")))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    d.call("prompt", {"text": "go"})
    assert settled_message(d)["content"][-1]["text"] == "after the wait"
    starts = [e["event"] for e in d.events if e["event"]["type"] == "auto_retry_start"]
    assert starts == [{"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 0,
                       "errorMessage": "429 Rate limit reached"}]
    assert len(server.requests) == 2


def test_500_three_times_then_success_and_then_giving_up(spawn, tmp_path, server):
    server.script(*[Reply(500, b'{"error":{"message":"boom"}}', "application/json")] * 3, Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    d.call("setAutoRetry", {"baseDelayMs": 5})
    d.call("prompt", {"text": "go"})
    assert settled_message(d)["content"][-1]["text"] == "ok"
    assert [e["event"]["delayMs"] for e in d.events if e["event"]["type"] == "auto_retry_start"] == [5, 10, 20]
    server.script(*[Reply(500, b'{"error":{"message":"boom"}}', "application/json")] * 4)
    d.call("prompt", {"text": "again"})
    final = settled_message(d, 2)
    assert final["stopReason"] == "error" and final["errorMessage"] == "500 boom"
    end = [e["event"] for e in d.events if e["event"]["type"] == "auto_retry_end"][-1]
    assert end == {"type": "auto_retry_end", "success": False, "attempt": 3, "finalError": "500 boom"}


def test_mid_stream_disconnect_is_retried(spawn, tmp_path, server):
    body = openai_sse([openai_chunk({"content": "partial "}), openai_chunk({"content": "answer"}), openai_chunk({}, "stop")])
    cut = body.index(b"data:", body.index(b"partial"))  # after the first content chunk
    server.script(Reply(body=body, drop_after=cut, piece=cut), Reply(body=openai_text("complete answer")))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    d.call("setAutoRetry", {"baseDelayMs": 1})
    d.call("prompt", {"text": "go"})
    assert settled_message(d)["content"][-1]["text"] == "complete answer"
    messages = d.call("getMessages")["messages"]
    failed = messages[1]
    assert failed["stopReason"] == "error" and "connection lost" in failed["errorMessage"]
    assert failed["content"][0]["text"].startswith("partial")  # what arrived is kept


def test_abort_mid_stream_through_the_daemon(spawn, tmp_path, server):
    body = openai_sse([openai_chunk({"content": "tok "}) for _ in range(100)] + [openai_chunk({}, "stop")])
    server.script(Reply(body=body, piece=50, stall_after=2000))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 4)
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    final = settled_message(d)
    assert final["stopReason"] == "aborted" and final["content"][0]["text"].startswith("tok tok")
    assert "auto_retry_start" not in d.event_types()


def test_overflow_is_reported_not_retried(spawn, tmp_path, server):
    server.script(openai_error(400, "This model's maximum context length is 4096 tokens.", code="context_length_exceeded"))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server))
    d.call("prompt", {"text": "go"})
    final = settled_message(d)
    assert final["errorMessage"] == "400 This model's maximum context length is 4096 tokens."
    assert "auto_retry_start" not in d.event_types() and len(server.requests) == 1
    # Recovery looked for something to compact; a lone prompt is not summarised away.
    end = next(e["event"] for e in d.events if e["event"]["type"] == "compaction_end")
    assert end["reason"] == "overflow" and "nothing to compact" in end["errorMessage"]


def test_missing_key_is_a_clear_error_and_the_key_is_sent_when_set(spawn, tmp_path, server):
    ws = workspace_with(tmp_path, server, apiKey="$LOOPBACK_KEY")  # a workspace may read the environment
    d = spawn("--trust-workspace", cwd=ws)                         # only once it is trusted
    listed = d.call("listModels")
    assert not any(m["provider"] == "local" for m in listed["models"])
    local = next(u for u in listed["unavailable"] if u["provider"] == "local")
    assert local == {"provider": "local", "reason": "no API key for local: set the environment variable LOOPBACK_KEY",
                     "models": ["coder"]}
    error = d.request("setModel", {"provider": "local", "modelId": "coder"})["error"]
    assert error["code"] == -32004 and "LOOPBACK_KEY" in error["message"]
    keyless = spawn("--trust-workspace", "--model", "local/coder", cwd=ws)
    error = keyless.request("prompt", {"text": "hi"})["error"]
    assert error == {"code": -32004, "message": "no API key for local: set the environment variable LOOPBACK_KEY"}
    assert server.requests == []  # nothing was sent without a key
    server.script(Reply(body=openai_text("authorised")))
    d2 = spawn("--trust-workspace", "--model", "local/coder", cwd=ws, env={"LOOPBACK_KEY": "sk-loop"})
    d2.call("prompt", {"text": "hi"})
    assert settled_message(d2)["content"][-1]["text"] == "authorised"
    assert server.requests[0].headers["authorization"] == "Bearer sk-loop"


def test_builtin_anthropic_pointed_at_the_loopback_by_the_users_config(spawn, tmp_path, server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.json").write_text(json.dumps({"providers": {"anthropic": {"baseUrl": server.url}}}))
    server.script(anthropic_error(529, "overloaded_error", "Overloaded"),
                  Reply(body=anthropic_message([{"start": {"type": "text", "text": ""},
                                                 "deltas": [{"type": "text_delta", "text": "Claude here."}]}])))
    d = spawn("--model", "anthropic/claude-haiku-4-5", cwd=str(tmp_path),
              env={"ANTHROPIC_API_KEY": "sk-ant-loop", "PI_DAEMON_HOME": str(home)})
    d.call("setAutoRetry", {"baseDelayMs": 1})
    d.call("prompt", {"text": "hi"})
    final = settled_message(d)
    assert final["content"][-1]["text"] == "Claude here." and final["api"] == "anthropic-messages"
    assert server.requests[1].headers["x-api-key"] == "sk-ant-loop"
    assert server.requests[1].body["model"] == "claude-haiku-4-5"


def test_listing_without_keys_says_why(spawn, tmp_path):
    d = spawn()
    listed = d.call("listModels")
    assert [m["provider"] for m in listed["models"]] == ["faux"]
    reasons = {u["provider"]: u["reason"] for u in listed["unavailable"]}
    assert reasons["openai"] == "no API key for openai: set the environment variable OPENAI_API_KEY"
    assert "claude-sonnet-4-5" in next(u for u in listed["unavailable"] if u["provider"] == "anthropic")["models"]


def test_invalid_models_json_stops_the_daemon_with_a_clear_message(tmp_path):
    import subprocess
    from client import clean_env
    from pi_daemon.client import daemon_command
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "models.json").write_text('{"providers": {"x": {"models": [{"contextWindow": 5}]}},')
    out = subprocess.run(daemon_command(), cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=20)
    assert out.returncode == 2
    assert "models.json: is not valid JSON" in out.stderr


def test_invalid_models_json_at_a_terminal_is_said_without_waiting_for_input(tmp_path):
    import os
    import pty
    import subprocess
    from client import clean_env
    from pi_daemon.client import daemon_command
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "models.json").write_text('{"providers": 5}')
    leader, follower = pty.openpty()
    try:
        out = subprocess.run(daemon_command(), cwd=tmp_path, env=clean_env(), capture_output=True, text=True,
                             stdin=follower, timeout=60)
    finally:
        os.close(leader)
        os.close(follower)
    assert out.returncode == 2 and "models.json" in out.stderr


def test_an_invalid_models_json_stops_the_daemon_before_it_answers_anything(tmp_path):
    """The models are read before the first frame is served: the client sees the process end
    with the reason on stderr, never a half-started daemon or a stray byte on stdout."""
    import subprocess
    from client import clean_env
    from pi_daemon.client import daemon_command
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "models.json").write_text('{"providers": 5}')
    init = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'
    proc = subprocess.Popen(daemon_command(), cwd=tmp_path, env=clean_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = proc.communicate(init, timeout=60)  # stdin stays open until this frame is written
    assert proc.returncode == 2 and b"models.json" in err
    assert out == b""
