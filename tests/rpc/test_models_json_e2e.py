"""Pi's models.json as is, through the daemon: Pi's own file, apiKey/header forms, authHeader,
entries the daemon cannot serve, and the models a local server lists itself."""

import json
import os
import time
from pathlib import Path

import pytest

from helpers import wait_until
from run_events import final_message
from loopback import LoopbackServer, Reply, TricklingServers, anthropic_message, openai_text

# The example of Pi's "Configure a compatible endpoint" (docs/models.md), unchanged.
PI_DOCS_EXAMPLE = """{
  "$schema": "https://pi.dev/schemas/models.schema.json",
  "providers": {
    "ollama": {
      "baseUrl": "http://localhost:11434/v1",
      "api": "openai-completions",
      "apiKey": "ollama",
      "models": [
        { "id": "qwen2.5-coder:7b" }
      ]
    }
  }
}"""
# Pi's proxy example: a built-in provider through another base URL.
PI_PROXY_EXAMPLE = '{"providers": {"anthropic": { "baseUrl": "https://proxy.example.com/v1" }}}'


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def homes(tmp_path) -> tuple[Path, Path]:
    pi_dir, home = tmp_path / "pi-agent", tmp_path / "home"
    pi_dir.mkdir()
    home.mkdir()
    return pi_dir, home


def env_for(pi_dir: Path, home: Path, **extra: str) -> dict:
    return {"PI_CODING_AGENT_DIR": str(pi_dir), "PI_DAEMON_HOME": str(home), **extra}


def test_a_pi_users_models_json_from_pis_docs_loads_as_is(spawn, tmp_path):
    pi_dir, home = homes(tmp_path)
    (pi_dir / "models.json").write_text(PI_DOCS_EXAMPLE)
    d = spawn(env=env_for(pi_dir, home, ANTHROPIC_API_KEY="sk-ant-test"))
    models = {f"{m['provider']}/{m['id']}": m for m in d.call("listModels")["models"]}
    ollama = models["ollama/qwen2.5-coder:7b"]
    assert ollama["api"] == "openai-completions" and ollama["contextWindow"] == 128000 and ollama["maxTokens"] == 16384
    (pi_dir / "models.json").write_text(PI_PROXY_EXAMPLE)
    d2 = spawn(env=env_for(pi_dir, home, ANTHROPIC_API_KEY="sk-ant-test"))
    assert "anthropic/claude-sonnet-4-5" in {f"{m['provider']}/{m['id']}" for m in d2.call("listModels")["models"]}


def test_the_daemons_own_file_wins_over_pis(spawn, tmp_path, server):
    pi_dir, home = homes(tmp_path)
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "pi-key",
        "models": [{"id": "m", "contextWindow": 8192}]}}}))
    (home / "models.json").write_text(json.dumps({"providers": {"local": {"baseUrl": server.url + "/v1"}}}))
    server.script(Reply(body=openai_text("from the daemon's base URL")))
    d = spawn("--model", "local/m", env=env_for(pi_dir, home))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "from the daemon's base URL"
    assert server.requests[0].headers["authorization"] == "Bearer pi-key"


def test_an_apikey_command_runs_once_is_cached_and_never_logged(spawn, tmp_path, server):
    pi_dir, home = homes(tmp_path)
    count = tmp_path / "runs"
    (home / "models.json").write_text(json.dumps({"providers": {"vault": {
        "baseUrl": server.url + "/v1", "api": "openai-completions",
        "apiKey": f"!echo run >> {count}; printf 'sk-from-vault-123'",
        "headers": {"X-Tenant": "!printf tenant-7", "X-Trace": "trace-${TRACE_ID}-$$"},
        "models": [{"id": "m"}]}}}))
    server.script(Reply(body=openai_text("one")), Reply(body=openai_text("two")))
    d = spawn("--model", "vault/m", "--log-level", "debug", env=env_for(pi_dir, home, TRACE_ID="abc"))
    assert not count.exists()  # nothing runs until a request needs the key
    d.call("prompt", {"text": "a"})
    final_message(d)
    d.call("prompt", {"text": "b"})
    assert final_message(d, 2)["content"][-1]["text"] == "two"
    for request in server.requests:
        assert request.headers["authorization"] == "Bearer sk-from-vault-123"
        assert request.headers["x-tenant"] == "tenant-7" and request.headers["x-trace"] == "trace-abc-$"
    assert count.read_text() == "run\n"  # once, for both requests
    assert b"sk-from-vault-123" not in d.stderr and b"tenant-7" not in d.stderr


def test_an_apikey_commands_program_never_comes_from_a_path_folder_in_the_workspace(spawn, tmp_path, server):
    """The user's ``!vault-key``, run with ``<workspace>/.venv/bin`` first in PATH (an activated
    environment that ships its own ``vault-key``): the user's program outside the workspace answers."""
    pi_dir, home = homes(tmp_path)
    ws, ran = tmp_path / "ws", tmp_path / "ran"
    for folder, key in ((ws / ".venv" / "bin", "sk-planted"), (tmp_path / "tools", "sk-users-own")):
        folder.mkdir(parents=True)
        (folder / "vault-key").write_text(f"#!/bin/sh\necho {key} >> {ran}\nprintf {key}\n")
        (folder / "vault-key").chmod(0o755)
    (home / "models.json").write_text(json.dumps({"providers": {"vault": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "apiKey": "!vault-key", "models": [{"id": "m"}]}}}))
    server.script(Reply(body=openai_text("one")))
    d = spawn("--model", "vault/m", cwd=str(ws), env=env_for(
        pi_dir, home, PATH=f"{ws / '.venv' / 'bin'}:{tmp_path / 'tools'}:{os.environ['PATH']}"))
    d.call("prompt", {"text": "a"})
    assert final_message(d)["content"][-1]["text"] == "one"
    assert server.requests[0].headers["authorization"] == "Bearer sk-users-own"
    assert ran.read_text() == "sk-users-own\n"


def test_a_failing_apikey_command_makes_the_model_unavailable_with_the_reason(spawn, tmp_path, server):
    pi_dir, home = homes(tmp_path)
    (home / "models.json").write_text(json.dumps({"providers": {"vault": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "apiKey": "!echo secret-out; exit 3",
        "models": [{"id": "m"}]}}}))
    d = spawn("--model", "vault/m", env=env_for(pi_dir, home))
    d.call("prompt", {"text": "a"})
    final = final_message(d)
    assert final["stopReason"] == "error" and server.requests[0].headers.get("authorization") is None
    unavailable = {u["provider"]: u["reason"] for u in d.call("listModels")["unavailable"]}
    assert unavailable["vault"] == "no API key for vault: the apiKey/header command failed with exit status 3"
    assert b"secret-out" not in d.stderr


def test_an_untrusted_workspace_runs_no_command_and_reads_no_environment(spawn, tmp_path, server):
    marker = tmp_path / "ran"
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "models.json").write_text(json.dumps({"providers": {"repo": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "apiKey": f"!touch {marker}; echo k",
        "headers": {"X-Leak": "${HOME_SECRET}", "X-Run": f"!touch {marker}; echo r"}, "models": [{"id": "m"}]}}}))
    server.script(Reply(body=openai_text("untrusted")))
    d = spawn("--model", "repo/m", env={"HOME_SECRET": "do-not-send"})
    ignored = {i["field"]: i["effect"] for i in d.call("getState")["workspaceTrust"]["ignored"]}
    assert ignored["providers.repo.apiKey"] == "would run a command"
    assert ignored["providers.repo.headers.X-Run"] == "would run a command"
    assert ignored["providers.repo.headers.X-Leak"] == "would send the environment variable HOME_SECRET"
    assert ignored["providers.repo"] == "would send the conversation to a server only this workspace names"
    assert d.call("getState")["model"] is None  # --model names a provider only the workspace defines
    assert d.wait_stderr(b"--model: model repo/m is defined only by")
    error = d.request("prompt", {"text": "hi"})["error"]
    assert error["code"] == -32004 and "trust" in error["message"]
    assert server.requests == [] and not marker.exists()
    trusted = spawn("--trust-workspace", "--model", "repo/m")
    trusted.call("prompt", {"text": "hi"})
    assert final_message(trusted)["content"][-1]["text"] == "untrusted"
    assert server.requests[0].headers["authorization"] == "Bearer k" and marker.exists()


def test_auth_header_sends_the_key_as_a_bearer_token(spawn, tmp_path, server):
    pi_dir, home = homes(tmp_path)
    (home / "models.json").write_text(json.dumps({"providers": {"gateway": {
        "baseUrl": server.url, "api": "anthropic-messages", "apiKey": "$GATEWAY_TOKEN", "authHeader": True,
        "models": [{"id": "claude-via-gateway", "reasoning": True}]}}}))
    server.script(Reply(body=anthropic_message([{"start": {"type": "text", "text": ""},
                                                 "deltas": [{"type": "text_delta", "text": "via gateway"}]}])))
    d = spawn("--model", "gateway/claude-via-gateway", env=env_for(pi_dir, home, GATEWAY_TOKEN="gw-token-1"))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "via gateway"
    assert server.requests[0].headers["authorization"] == "Bearer gw-token-1"


def test_an_entry_the_daemon_cannot_serve_disables_its_provider_only(spawn, tmp_path, server):
    pi_dir, home = homes(tmp_path)
    (pi_dir / "models.json").write_text(json.dumps({"providers": {
        "bedrock-ish": {"baseUrl": "https://bedrock.example", "api": "bedrock-converse-stream",
                        "models": [{"id": "nova"}]},
        "broken": {"baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"contextWindow": 5}]},
        "local": {"baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"id": "coder"}]}}}))
    d = spawn("--model", "local/coder", env=env_for(pi_dir, home))
    listed = d.call("listModels")
    assert any(m["provider"] == "local" for m in listed["models"])
    reasons = {u["provider"]: u for u in listed["unavailable"]}
    assert reasons["bedrock-ish"]["models"] == ["nova"]
    assert "unknown api 'bedrock-converse-stream'" in reasons["bedrock-ish"]["reason"]
    assert "providers.broken does not fit the models.json shape: models.0: 'id' is a required property" in \
        reasons["broken"]["reason"]
    assert d.wait_stderr(b"provider 'bedrock-ish' is disabled")
    server.script(Reply(body=openai_text("still serving")))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "still serving"


def test_a_local_server_with_no_models_listed_is_asked_for_them(spawn, tmp_path, server):
    # llama-server's answers, as recorded from llama.cpp (tests/llm/fixtures).
    server.routes["/v1/models"] = Reply(200, json.dumps({"models": [{"name": "smollm2.gguf", "model": "smollm2.gguf"}],
        "object": "list", "data": [{"id": "smollm2.gguf", "object": "model", "created": 1764745200,
                                    "owned_by": "llamacpp", "meta": {"vocab_type": 2, "n_vocab": 49152,
                                                                     "n_ctx_train": 8192, "n_embd": 576}}]}).encode(),
        "application/json")
    server.routes["/props"] = Reply(200, b'{"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}',
                                    "application/json")
    pi_dir, home = homes(tmp_path)
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"llama": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": []}}}))
    d = spawn("--model", "llama/smollm2.gguf", env=env_for(pi_dir, home))
    model = next(m for m in d.call("listModels")["models"] if m["provider"] == "llama")
    assert model["id"] == "smollm2.gguf" and model["contextWindow"] == 4096  # as started (-c), not as trained
    server.script(Reply(body=openai_text("discovered")))
    d.call("prompt", {"text": "hi"})
    assert final_message(d)["content"][-1]["text"] == "discovered"
    assert server.requests[0].body["model"] == "smollm2.gguf"


def test_a_listing_server_that_is_down_is_reported_not_fatal(spawn, tmp_path):
    pi_dir, home = homes(tmp_path)
    (home / "models.json").write_text(json.dumps({"providers": {"vllm": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "models": []}}}))
    d = spawn(env=env_for(pi_dir, home))
    reason = next(u for u in d.call("listModels")["unavailable"] if u["provider"] == "vllm")["reason"]
    assert reason.startswith("models.json: provider 'vllm': listing its models at http://127.0.0.1:9/v1/models failed")



def test_a_listing_server_that_trickles_is_given_up_at_the_deadline(spawn, tmp_path):
    trickling = TricklingServers()
    try:
        pi_dir, home = homes(tmp_path)
        (home / "models.json").write_text(json.dumps({"providers": {"slow": {
            "baseUrl": trickling.url + "/v1", "api": "openai-completions", "models": []}}}))
        started = time.monotonic()
        d = spawn(env=env_for(pi_dir, home))
        reason = next(u for u in d.call("listModels")["unavailable"] if u["provider"] == "slow")["reason"]
        assert reason == (f"models.json: provider 'slow': listing its models at {trickling.url}/v1/models got no "
                          "whole answer within 3 s")
        assert time.monotonic() - started < 30  # the daemon starts (3 s deadline): no byte-a-second answer holds it
        wait_until(lambda: trickling.closed == trickling.opened == 1, "the daemon to close the connection")
    finally:
        trickling.close()


def test_an_untrusted_workspace_does_not_make_the_daemon_ask_a_server(spawn, tmp_path, server):
    server.routes["/v1/models"] = Reply(200, b'{"object": "list", "data": [{"id": "m", "object": "model"}]}',
                                        "application/json")
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "models.json").write_text(json.dumps({"providers": {"probe": {
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": []}}}))
    d = spawn()
    reason = next(u for u in d.call("listModels")["unavailable"] if u["provider"] == "probe")["reason"]
    assert "once the workspace is trusted" in reason and server.route_hits == []
    trusted = spawn("--trust-workspace")
    assert any(m["provider"] == "probe" and m["id"] == "m" for m in trusted.call("listModels")["models"])


def test_model_overrides_merge_field_by_field_and_unknown_ids_are_ignored(spawn, tmp_path):
    pi_dir, home = homes(tmp_path)
    (pi_dir / "models.json").write_text(json.dumps({"providers": {"openai": {"modelOverrides": {
        "gpt-5": {"cost": {"input": 1.0}, "contextWindow": 200000},
        "gpt-that-does-not-exist": {"contextWindow": 5}}}}}))
    d = spawn(env=env_for(pi_dir, home, OPENAI_API_KEY="sk-x"))
    models = {m["id"]: m for m in d.call("listModels")["models"] if m["provider"] == "openai"}
    assert models["gpt-5"]["contextWindow"] == 200000
    assert models["gpt-5"]["cost"] == {"input": 1.0, "output": 10, "cacheRead": 0.125, "cacheWrite": 0}
    assert "gpt-that-does-not-exist" not in models
