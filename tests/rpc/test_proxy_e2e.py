"""A proxy in the environment and model servers, through ``pi-daemon ask``: a server on this
machine is never asked through the proxy; a refusal by the proxy names the proxy (pi_daemon/llm/proxy.py)."""

import socket
import subprocess
import sys

import pytest

from client import clean_env, user_models
from loopback import LoopbackServer, Reply, openai_text

PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
              "NO_PROXY", "no_proxy")


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed on leaving: nothing listens there


def ask(workspace, base_url, proxy):
    user_models(workspace, {"providers": {"srv": {"baseUrl": base_url, "api": "openai-completions", "apiKey": "k",
                                                  "models": [{"id": "m", "contextWindow": 32768, "maxTokens": 256}]}}})
    env = {k: v for k, v in clean_env(cwd=str(workspace)).items() if k not in PROXY_VARS}
    env["HTTP_PROXY"] = proxy  # and no NO_PROXY
    return subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "srv/m", "hello"], cwd=workspace,
                          env=env, capture_output=True, text=True, timeout=60)


def test_a_model_server_on_this_machine_is_not_asked_through_the_proxy(tmp_path, server):
    server.script(Reply(body=openai_text("answered here")))
    proxy = f"http://127.0.0.1:{dead_port()}"
    for host in ("127.0.0.1", "localhost"):
        out = ask(tmp_path, f"{server.url.replace('127.0.0.1', host)}/v1", proxy)
        assert out.returncode == 0 and out.stdout == "answered here\n", out.stderr
        server.script(Reply(body=openai_text("answered here")))


def test_a_refusing_proxy_is_named_not_the_server_it_never_reached(tmp_path):
    proxy = f"http://127.0.0.1:{dead_port()}"
    out = ask(tmp_path, "http://models.example.invalid/v1", f"http://user:secret@127.0.0.1:{proxy.rsplit(':', 1)[1]}")
    assert out.returncode == 1, out.stderr
    assert out.stderr.splitlines()[-1] == (
        f"pi-daemon ask: connection refused by the proxy {proxy} (from the environment) on the way to "
        "http://models.example.invalid/v1/chat/completions: is the proxy running?")
    assert "secret" not in out.stderr and "retrying" not in out.stderr  # a refusal on this machine is not retried
