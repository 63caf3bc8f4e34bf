"""``pi-daemon ps``: the running servers of this user; a stale entry is cleaned, not listed."""

from __future__ import annotations

import json
import os
import signal

from servers import gone, wait_until


def test_ps_lists_workspace_pid_sessions_and_connections(rt):
    bridge = rt.attach()
    bridge.call("initialize", {})
    session = bridge.call("session/new", {})
    assert session
    wait_until(lambda: (rt.info() or {}).get("sessions") == 1, "the session counted")
    pid = rt.server_pid()
    listed = json.loads(rt.run("ps", "--json").stdout)
    assert listed == [{"workspace": os.path.realpath(rt.workspace), "pid": pid, "sessions": 1, "connections": 1,
                       "socket": str(rt.path(".sock"))}]
    table = rt.run("ps").stdout.decode().splitlines()
    assert table[0].split() == ["WORKSPACE", "PID", "SESSIONS", "CONNECTIONS", "SOCKET"]
    assert table[1].split() == [os.path.realpath(rt.workspace), str(pid), "1", "1", str(rt.path(".sock"))]


def test_ps_skips_and_cleans_a_killed_server_s_entry(rt):
    rt.attach().call("initialize", {})
    pid = rt.server_pid()
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: gone(pid), "the server to die")
    assert rt.path(".json").exists()  # killed: it could not clean up
    assert json.loads(rt.run("ps", "--json").stdout) == []
    assert not rt.path(".json").exists() and not rt.path(".sock").exists()
    assert rt.run("ps").stdout == b"no pi-daemon server is running\n"
