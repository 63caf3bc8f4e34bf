"""mcp.json and ACP server lists: what is used, what is reported, what waits for trust."""

import json
import subprocess
import sys

import pytest

from pi_daemon.mcp import config as C


@pytest.fixture
def home(tmp_path, monkeypatch):
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("PI_DAEMON_HOME", str(folder))
    return folder


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data))


def test_home_and_trusted_workspace_entries_with_variables(tmp_path, home, monkeypatch):
    monkeypatch.setenv("DOCS_TOKEN", "s3cret")
    write(home / "mcp.json", {"mcpServers": {
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "fs": {"command": "npx", "args": ["-y", "server-fs"], "cwd": "sub"},
        "off": {"command": "x", "enabled": False}}})
    ws = tmp_path / "ws"
    write(ws / ".pi" / "mcp.json", {"mcpServers": {"fs": {"command": "uvx", "args": ["fs2"], "timeout": 5}}})
    servers, problems, ignored = C.load(ws, trusted=True)
    by = {s.name: s for s in servers}
    assert problems == [] and ignored == [] and set(by) == {"docs", "fs"}
    assert by["docs"].headers == (("Authorization", "Bearer s3cret"),) and by["docs"].transport == "http"
    assert by["fs"].command == "uvx" and by["fs"].timeout == 5 and by["fs"].cwd == str(ws / ".")
    untrusted, _, ignored = C.load(ws, trusted=False)
    assert {s.name: s.command for s in untrusted}["fs"] == "npx"
    assert by["fs"].source.endswith(".pi/mcp.json")
    assert [(i.field, i.effect) for i in ignored] == [("mcpServers.fs", "would start the process `uvx fs2`")]


def test_broken_files_and_entries_are_reported_not_fatal(tmp_path, home):
    write(home / "mcp.json", '{"mcpServers": ')
    servers, problems, _ = C.load(tmp_path, trusted=True)
    assert servers == [] and "cannot be read" in problems[0].message
    write(home / "mcp.json", {"servers": {}})
    assert '"mcpServers" object' in C.load(tmp_path, trusted=True)[1][0].message
    write(home / "mcp.json", {"mcpServers": {"ok": {"command": "x"}, "a b": {"command": "x"},
                                             "t": {"command": "x", "timeout": -1}, "u": {"url": "ftp://x"},
                                             "args": {"command": "x", "args": "not a list"}}})
    servers, problems, _ = C.load(tmp_path, trusted=True)
    assert [s.name for s in servers] == ["ok"]
    messages = " | ".join(p.message for p in problems)
    assert "'a b'" in messages and "timeout must be" in messages and "needs a command" in messages
    assert "args must be an array" in messages


def test_acp_server_lists():
    servers = C.from_acp([{"name": "a", "command": "node", "args": ["s.js"], "env": [{"name": "K", "value": "v"}]},
                          {"type": "http", "name": "b", "url": "http://127.0.0.1:9/mcp",
                           "headers": [{"name": "X", "value": "1"}]}], "/w")
    assert servers[0].env == (("K", "v"),) and servers[0].cwd == "/w" and servers[0].source == "session"
    assert servers[1].transport == "http" and servers[1].headers == (("X", "1"),)
    for bad, message in [([{"command": "x"}], "needs a name"), ([{"name": "a"}], "needs a command"),
                         ([{"name": "a", "command": "x", "env": {"K": "v"}}], "env must be an array"),
                         ([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}], "listed twice"),
                         ([{"type": "sse", "name": "a", "url": "http://x"}], "needs a command")]:
        with pytest.raises(ValueError, match=message):
            C.from_acp(bad, "/w")


def test_the_daemon_starts_without_loading_the_mcp_sdk():
    code = ("import sys; import pi_daemon.cli, pi_daemon.rpc.server, pi_daemon.session.manager; "
            "print([m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'pydantic', 'httpx2'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
