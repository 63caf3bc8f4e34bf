"""What a real llama.cpp ``llama-server`` (SmolLM2-135M, ``--jinja``) sent, replayed byte for
byte through the daemon: discovery from ``/v1/models`` and ``/props``, a streamed answer with
llama.cpp's ``timings`` and final usage chunk, prompt-cache counts, and a chat template that
drops tools. The bytes were recorded by test_real_llama_server.py (``RECORD_LLAMA_FIXTURES=1``)."""

import json
from pathlib import Path

import pytest

from loopback import LoopbackServer, Reply
from run_events import final_message

FIXTURES = Path(__file__).resolve().parents[1] / "llm" / "fixtures" / "llama_server"


def recorded(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def streamed(name: str) -> tuple[str, dict]:
    """The text and the usage chunk of a recorded stream, read independently of the daemon."""
    text, usage = "", {}
    for line in recorded(name).decode().splitlines():
        if line.startswith("data: {"):
            chunk = json.loads(line[len("data: "):])
            text += "".join(c["delta"].get("content") or "" for c in chunk["choices"])
            usage = chunk.get("usage") or usage
    return text, usage


@pytest.fixture
def llama():
    server = LoopbackServer()
    server.routes["/props"] = Reply(200, recorded("props.json"), "application/json")
    server.routes["/v1/models"] = Reply(200, recorded("v1_models.json"), "application/json")
    yield server
    server.close()


def test_a_recorded_llama_server_session_through_the_daemon(spawn, tmp_path, llama):
    pi_dir = tmp_path / "pi-agent"  # the user's own models.json (a workspace's waits for trust)
    pi_dir.mkdir()
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"llama": {
        "baseUrl": llama.url + "/v1", "api": "openai-completions", "models": []}}}))
    llama.script(Reply(body=recorded("chat.sse"), piece=61), Reply(body=recorded("tools.sse"), piece=5))
    d = spawn("--model", "llama/smollm2-135m", env={"PI_CODING_AGENT_DIR": str(pi_dir)})

    listed = [m for m in d.call("listModels")["models"] if m["provider"] == "llama"]
    assert [(m["id"], m["contextWindow"]) for m in listed] == [("smollm2-135m", 4096)]  # n_ctx, not n_ctx_train

    for n, name in enumerate(["chat.sse", "tools.sse"], start=1):
        d.call("prompt", {"text": f"prompt {n}"})
        final = final_message(d, n)
        text, usage = streamed(name)
        assert text and final["content"] == [{"type": "text", "text": text}]
        assert final["stopReason"] == "stop"
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        assert (final["usage"]["input"], final["usage"]["output"], final["usage"]["cacheRead"]) == (
            usage["prompt_tokens"] - cached, usage["completion_tokens"], cached)
    assert streamed("tools.sse")[1]["prompt_tokens_details"]["cached_tokens"] > 0  # the prompt cache was hit

    # The daemon sent its tools; this server's template cannot render them, and the user is told once.
    assert all(r.body["tools"] for r in llama.requests)
    stderr = d.stderr.decode()
    assert stderr.count("reports that its chat template has no tool support") == 1
    assert [m["stopReason"] for m in d.call("getMessages")["messages"] if m["role"] == "assistant"] == ["stop", "stop"]
