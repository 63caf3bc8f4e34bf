"""The daemon answers a prompt to a provider without importing httpx (nor idna, httpcore,
httpx_sse): that import was a sixth of the CPU from spawn to the first streamed text. Python
itself reports every import (``PYTHONPROFILEIMPORTTIME``, on the daemon's stderr)."""

from test_providers_e2e import server, settled_message, workspace_with  # noqa: F401 - server is a fixture

from loopback import Reply, openai_text

HTTP_PACKAGES = {"httpx", "httpx_sse", "httpcore", "idna", "h11", "anyio"}
# A proxy in the environment is what makes the daemon use httpx.
NO_PROXY = {name: "" for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")}


def imported(stderr: bytes) -> set[str]:
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_a_prompt_is_answered_without_importing_httpx(spawn, tmp_path, server):  # noqa: F811
    server.script(Reply(body=openai_text("no httpx here")))
    d = spawn("--model", "local/coder", cwd=workspace_with(tmp_path, server),
              env={"PYTHONPROFILEIMPORTTIME": "1", **NO_PROXY})
    d.call("prompt", {"text": "hello"})
    assert settled_message(d)["content"][-1]["text"] == "no httpx here"
    assert d.close() == 0
    d.kill()  # waits for the rest of stderr
    names = imported(bytes(d.stderr))
    assert {"pi_daemon.llm.http_transport", "pi_daemon.llm.sse_run"} <= names
    assert {name.split(".")[0] for name in names} & HTTP_PACKAGES == set()
