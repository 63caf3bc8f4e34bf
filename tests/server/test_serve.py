"""``pi-daemon serve``: one per workspace, its files, its idle exit, its stop."""

from __future__ import annotations

import json
import signal
import socket
import subprocess

from servers import gone, wait_until


def _serve(rt, *options: str, workspace=None) -> subprocess.Popen:
    proc = rt.popen("serve", "--workspace", str(workspace or rt.workspace), "--model", "faux/echo", *options,
                    stderr=subprocess.PIPE)
    wait_until(lambda: rt.info(workspace) or proc.poll() is not None, "the server's info file")
    assert proc.poll() is None, proc.stderr.read()
    return proc


def test_a_second_serve_exits_1_saying_where_the_first_one_is(rt):
    first = _serve(rt)
    second = rt.run("serve", "--workspace", str(rt.workspace), "--model", "faux/echo")
    assert second.returncode == 1
    message = second.stderr.decode()
    assert f"pid {first.pid}" in message and str(rt.path(".sock")) in message
    assert first.poll() is None


def test_sigterm_stops_the_server_and_removes_its_files(rt):
    server = _serve(rt)
    server.send_signal(signal.SIGTERM)
    assert server.wait(20) == 0
    assert not [p.name for p in rt.folder.iterdir() if not p.name.endswith(".log")]


def test_the_server_exits_once_idle_for_the_timeout_and_not_while_a_connection_is_open(rt):
    server = _serve(rt, "--idle-timeout", "1")
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(str(rt.path(".sock")))
    wait_until(lambda: (rt.info() or {}).get("connections") == 1, "the connection counted")
    # Idle timeouts pass while the connection stays: a second server with the same timeout,
    # started now with no connection, stops first.
    other = rt.workspace.parent / "other"
    other.mkdir()
    witness = _serve(rt, "--idle-timeout", "1", workspace=other)
    assert witness.wait(30) == 0
    assert server.poll() is None
    conn.close()
    assert server.wait(30) == 0
    assert not rt.path(".sock").exists() and not rt.path(".json").exists() and not rt.path(".lock").exists()


def test_the_idle_timeout_is_the_user_s_setting_never_the_workspace_s(rt):
    (rt.workspace / ".pi").mkdir()
    (rt.workspace / ".pi" / "settings.json").write_text(json.dumps({"server": {"idleTimeoutSeconds": 1}}))
    stays = _serve(rt, "--trust-workspace")
    other = rt.workspace.parent / "other"
    other.mkdir()
    with open(f"{rt.home}/settings.json", "w") as f:
        json.dump({"server": {"idleTimeoutSeconds": 1}}, f)
    goes = _serve(rt, workspace=other)
    assert goes.wait(30) == 0
    assert stays.poll() is None and not gone(stays.pid)
