"""The model registry: catalog, models.json from home and workspace, keys, availability."""

import json

import pytest

from pi_daemon.llm.config import ConfigError
from pi_daemon.llm.registry import ModelRegistry, ModelUnavailable


@pytest.fixture
def env(tmp_path, monkeypatch):
    home = tmp_path / "home"
    workspace = tmp_path / "ws"
    (workspace / ".pi").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("PI_DAEMON_HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi-agent"))
    for var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "LOCAL_KEY"):
        monkeypatch.delenv(var, raising=False)
    return home, workspace


def write(path, data):
    path.write_text(json.dumps(data))


def test_builtin_models_need_their_keys(env, monkeypatch):
    home, ws = env
    registry = ModelRegistry.load(str(ws))
    sonnet = registry.resolve("anthropic/claude-sonnet-4-5")
    assert sonnet.context_window == 200_000 and sonnet.cost.output == 15 and sonnet.reasoning
    ok, reason = registry.availability(sonnet)
    assert not ok and reason == "no API key for anthropic: set the environment variable ANTHROPIC_API_KEY"
    with pytest.raises(ModelUnavailable, match="ANTHROPIC_API_KEY"):
        registry.usable(sonnet)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-x")
    assert registry.availability(sonnet) == (True, None)
    assert registry.api_key(sonnet) == "sk-ant-x"
    assert registry.first_usable().provider == "anthropic"
    assert registry.resolve("openrouter/anthropic/claude-sonnet-4.5").id == "anthropic/claude-sonnet-4.5"
    with pytest.raises(ModelUnavailable, match="provider/id"):
        registry.resolve("gpt-5")


def test_models_json_adds_providers_and_a_trusted_workspace_wins(env, monkeypatch):
    home, ws = env
    write(home / "models.json", {"providers": {
        "local": {"baseUrl": "http://home:1/v1", "api": "openai-completions",
                  "models": [{"id": "small", "contextWindow": 8192}, {"id": "big"}]},
        "anthropic": {"baseUrl": "http://proxy:2", "headers": {"x-team": "$TEAM"}},
    }})
    write(ws / ".pi" / "models.json", {"providers": {
        "local": {"baseUrl": "http://ws:3/v1", "apiKey": "$LOCAL_KEY",
                  "models": [{"id": "small", "contextWindow": 16384, "maxTokens": 2048, "reasoning": True,
                              "input": ["text", "image"], "cost": {"input": 1, "output": 2}}]},
        "anthropic": {"modelOverrides": {"claude-haiku-4-5": {"contextWindow": 100_000}}},
    }})
    monkeypatch.setenv("TEAM", "blue")
    registry = ModelRegistry.load(str(ws), trusted=True)
    small = registry.resolve("local/small")
    assert (small.base_url, small.context_window, small.max_tokens, small.reasoning) == ("http://ws:3/v1", 16384, 2048, True)
    assert small.cost.input == 1 and small.cost.output == 2 and small.input == ["text", "image"]
    assert registry.resolve("local/big").base_url == "http://ws:3/v1"  # provider fields apply to all its models
    assert registry.availability(small) == (False, "no API key for local: set the environment variable LOCAL_KEY")
    monkeypatch.setenv("LOCAL_KEY", "k")
    assert registry.availability(small) == (True, None)
    haiku = registry.resolve("anthropic/claude-haiku-4-5")
    assert haiku.base_url == "http://proxy:2" and haiku.context_window == 100_000
    assert haiku.headers == {"x-team": "blue"}


def test_local_provider_without_api_key_needs_none(env):
    home, ws = env
    write(ws / ".pi" / "models.json", {"providers": {"ollama": {
        "baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "models": [{"id": "qwen2.5-coder:7b"}]}}})
    registry = ModelRegistry.load(str(ws), trusted=True)
    assert registry.availability(registry.resolve("ollama/qwen2.5-coder:7b")) == (True, None)


@pytest.mark.parametrize("content, message", [
    ("{not json", "is not valid JSON"),
    ('["providers"]', "does not fit the models.json shape"),
])
def test_a_file_that_is_not_a_models_json_is_a_clear_error(env, content, message):
    home, ws = env
    (ws / ".pi" / "models.json").write_text(content)
    with pytest.raises(ConfigError) as info:
        ModelRegistry.load(str(ws))
    assert message in str(info.value)


@pytest.mark.parametrize("entry, message", [
    ({"models": [{"name": "no id"}]}, "providers.x does not fit the models.json shape: models.0: 'id' is a required property"),
    ({"models": [{"id": "m", "contextWindow": "big"}]}, "'big' is not of type 'integer'"),
    ({"api": "grpc-magic", "baseUrl": "http://a", "models": [{"id": "m"}]},
     "provider 'x': model 'm': unknown api 'grpc-magic'"),
    ({"api": "openai-completions", "models": [{"id": "m"}]}, "provider 'x': model 'm' has no baseUrl"),
])
def test_an_entry_that_cannot_be_served_disables_only_its_provider(env, entry, message):
    home, ws = env
    write(ws / ".pi" / "models.json", {"providers": {"x": entry, "ok": {
        "baseUrl": "http://localhost:8080/v1", "api": "openai-completions", "models": [{"id": "fine"}]}}})
    registry = ModelRegistry.load(str(ws), trusted=True)
    assert registry.availability(registry.resolve("ok/fine")) == (True, None)
    [disabled] = registry.disabled
    assert disabled.provider == "x" and message in disabled.reason
    with pytest.raises(ModelUnavailable):
        registry.resolve("x/m")


def test_every_example_in_docs_models_md_loads(env):
    import re
    from pathlib import Path
    home, ws = env
    doc = (Path(__file__).resolve().parents[2] / "docs" / "models.md").read_text()
    examples = re.findall(r"```json\n(.*?)\n```", doc, re.S)
    assert len(examples) == 6  # Ollama, llama.cpp, vLLM, LM Studio, OpenRouter, OpenAI
    for example in examples:
        (ws / ".pi" / "models.json").write_text(example)
        registry = ModelRegistry.load(str(ws), trusted=True)
        for name, provider in json.loads(example)["providers"].items():
            for model in provider.get("models", []):
                assert registry.resolve(f"{name}/{model['id']}").context_window == model["contextWindow"]


def test_timeouts_from_models_json(env):
    home, ws = env
    write(ws / ".pi" / "models.json", {"providers": {"slow": {
        "baseUrl": "http://x/v1", "api": "openai-completions", "connectTimeoutMs": 1500, "readTimeoutMs": 60000,
        "models": [{"id": "m"}]}}})
    model = ModelRegistry.load(str(ws), trusted=True).resolve("slow/m")
    assert (model.connect_timeout, model.read_timeout) == (1.5, 60.0)


def test_reading_a_usual_configuration_loads_neither_httpx_nor_jsonschema(env):
    """The models are read at start-up, before the first prompt: httpx is the provider's to load
    (and discovery's, when a provider asks for it), jsonschema only for a file that may not fit."""
    import subprocess
    import sys

    home, ws = env
    write(home / "models.json", {"providers": {"local": {
        "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": "none",
        "headers": {"X-A": "b"}, "compat": {"supportsStore": False},
        "models": [{"id": "m", "name": "M", "reasoning": False, "input": ["text", "image"], "contextWindow": 8192,
                    "maxTokens": 4096, "cost": {"input": 0.5, "output": 1, "cacheRead": 0, "cacheWrite": 0}}],
        "modelOverrides": {"other": {"name": "Other"}}}}})
    code = ("import sys; from pi_daemon.llm.registry import ModelRegistry; "
            f"registry = ModelRegistry.load({str(ws)!r}); model = registry.resolve('local/m'); "
            "assert model.context_window == 8192 and registry.first_usable() is not None; "
            "print(sorted(m for m in ('httpx', 'jsonschema') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
