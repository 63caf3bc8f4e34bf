"""Environment keys go only where the catalog or the user's models.json sends them, on every path."""

import json

import pytest

from loopback import Reply, anthropic_message
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.credentials import CredentialRefused, under
from pi_daemon.llm.http import sse_stream
from pi_daemon.llm.model import Context, StreamOptions
from pi_daemon.llm.registry import ModelRegistry
from pi_daemon.llm.stream import stream
from pi_daemon.messages import user_text

KEY = "sk-ant-wire-0123456789"


@pytest.fixture
def registry(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_DAEMON_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    (tmp_path / "ws").mkdir()
    return ModelRegistry.load(str(tmp_path / "ws"))


def test_under_compares_scheme_host_port_and_path():
    assert under("https://api.anthropic.com/v1/messages", "https://api.anthropic.com")
    assert under("https://API.anthropic.com:443/v1", "https://api.anthropic.com/")
    assert not under("https://api.anthropic.com.evil.test/v1", "https://api.anthropic.com")
    assert not under("https://api.anthropic.com@evil.test/v1", "https://api.anthropic.com")
    assert not under("http://api.anthropic.com/v1", "https://api.anthropic.com")
    assert not under("https://openrouter.ai/api/v10", "https://openrouter.ai/api/v1")


async def test_a_request_carrying_a_catalog_key_elsewhere_is_refused_before_sending(registry, server):
    import attrs
    server.script(Reply(body=anthropic_message([])))
    haiku = registry.resolve("anthropic/claude-haiku-4-5")
    moved = attrs.evolve(haiku, base_url=server.url)  # however a model came to point elsewhere
    assert registry.api_key(moved) is None
    with pytest.raises(CredentialRefused, match="ANTHROPIC_API_KEY is only sent to https://api.anthropic.com"):
        async for _ in sse_stream(moved, server.url + "/v1/messages", {"authorization": f"Bearer {KEY}"}, {},
                                  CancelToken()):
            pass
    # Through the provider seam the refusal is a final error event, and nothing was sent.
    events = [e async for e in stream(moved, Context(messages=[user_text("hi")]), StreamOptions(api_key=KEY),
                                      CancelToken())]
    assert events[-1].type == "error" and "is only sent to" in events[-1].error.error_message
    assert server.requests == []
    assert json.dumps(registry.availability(moved)).count("only sent to") == 1
