"""A workspace's ``.pi/mcp.json`` is read as data: a symlink in its place is never followed,
even once the workspace is trusted."""

import os
from pathlib import Path

import pytest

from loopback import LoopbackServer
from test_mcp_e2e import demo, mcp_json
from test_tools_e2e import project


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def test_a_symlinked_workspace_mcp_json_is_refused_after_trust(spawn, tmp_path, server):
    ws = project(tmp_path, server)
    elsewhere = mcp_json(tmp_path.parent / f"{tmp_path.name}-elsewhere", {"local": demo()})
    os.symlink(elsewhere, Path(ws) / ".pi" / "mcp.json")
    home = tmp_path / "home"
    home.mkdir()
    d = spawn("--model", "local/coder", cwd=ws, env={"PI_DAEMON_HOME": str(home)})
    d.on_request["workspace/trust"] = lambda p: None  # answered below
    d.call("initialize", {"capabilities": {"workspaceTrust": True}})
    question = d.wait_server_request("workspace/trust")
    d.respond(question["id"], {"trusted": True})
    d._wait(lambda: d.call("listTools")["problems"] or None, 20, "the mcp.json problem")
    listed = d.call("listTools")
    assert listed["servers"] == [], listed
    assert any("mcp.json" in p and "cannot be read" in p for p in listed["problems"]), listed
