"""``pi-daemon attach`` as an editor, or ssh, runs it: real bridges, real servers."""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess

from servers import INITIALIZE, PI_DAEMON, gone, wait_until


def test_attach_through_a_shell_starts_a_server_that_answers_and_outlives_it(rt):
    bridge = rt.attach(shell=True)
    result = bridge.call("initialize", {})
    assert result["workspace"] == os.path.realpath(rt.workspace)
    pid = rt.server_pid()
    assert result["server"] == {"shared": True, "pid": pid} and pid != bridge.proc.pid
    assert stat.S_IMODE(os.stat(rt.folder).st_mode) == 0o700
    assert stat.S_ISSOCK(os.stat(rt.path(".sock")).st_mode)
    assert stat.S_IMODE(os.stat(rt.path(".sock")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(rt.path(".log")).st_mode) == 0o600
    bridge.proc.stdin.close()  # the editor goes: the bridge ends, the server stays
    assert bridge.proc.wait(20) == 0
    assert not gone(pid)
    again = rt.attach()
    assert again.call("initialize", {})["workspace"] == os.path.realpath(rt.workspace)
    assert rt.server_pid() == pid


def test_two_attaches_racing_start_one_server_and_both_reach_it(rt):
    first, second = rt.attach(), rt.attach()
    for bridge in (first, second):
        bridge.call("initialize", {})
    wait_until(lambda: (rt.info() or {}).get("connections") == 2, "one server with both connections")
    assert len(list(rt.folder.glob("*.sock"))) == 1
    winner = rt.server_pid()
    wait_until(lambda: rt.servers() == [winner], "the server that lost the race to be gone")
    os.kill(winner, signal.SIGTERM)  # nothing is left waiting to take its place
    wait_until(lambda: not rt.servers(), "no server left")


def test_options_that_differ_from_the_running_server_s_are_ignored_with_one_line(rt):
    rt.attach().call("initialize", {})
    same = rt.run("attach", "--workspace", str(rt.workspace), "--model", "faux/echo", input=INITIALIZE)
    assert same.returncode == 0 and b'"id":1' in same.stdout and same.stderr == b""
    other = rt.run("attach", "--workspace", str(rt.workspace), "--model", "faux/other", input=INITIALIZE)
    assert other.returncode == 0 and b'"id":1' in other.stdout
    assert other.stderr.decode().count("\n") == 1 and "not applied: --model faux/other" in other.stderr.decode()


def test_a_stale_socket_and_info_are_replaced(rt):
    rt.folder.mkdir(mode=0o700)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(rt.path(".sock")))  # a socket file nobody listens on
    dead.close()
    rt.path(".json").write_text('{"pid": 999999999, "workspace": "/gone"}')
    rt.path(".lock").write_text("")
    bridge = rt.attach()
    assert bridge.call("initialize", {})
    assert rt.server_pid() != 999999999


def test_a_reader_that_stops_reading_or_a_killed_bridge_leave_the_server_serving(rt):
    bridge = rt.attach()
    bridge.call("initialize", {})
    pid = rt.server_pid()
    head = subprocess.run(["sh", "-c", f"'{PI_DAEMON}' attach --workspace '{rt.workspace}' | head -c 10"],
                          input=INITIALIZE * 50, env=rt.env, capture_output=True, timeout=60)
    assert head.returncode == 0 and len(head.stdout) == 10
    bridge.proc.send_signal(signal.SIGKILL)
    bridge.proc.wait(10)
    wait_until(lambda: (rt.info() or {}).get("connections") == 0, "both connections to end")
    assert not gone(pid)
    assert rt.attach().call("initialize", {})
    assert rt.server_pid() == pid


def test_a_server_that_cannot_start_is_told_with_the_end_of_its_log(rt):
    failed = rt.run("attach", "--workspace", str(rt.workspace), "--model", "nosuch/model", input=INITIALIZE)
    assert failed.returncode == 2
    assert b"the server did not start" in failed.stderr and b"nosuch" in failed.stderr
    assert b"nosuch" in rt.path(".log").read_bytes()
    assert not rt.path(".sock").exists() and not rt.path(".lock").exists()


def test_a_socket_path_longer_than_a_unix_socket_holds_is_a_clear_error(rt, tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    env = {**rt.env, "XDG_RUNTIME_DIR": str(deep)}
    for command in ("attach", "serve"):
        result = subprocess.run([PI_DAEMON, command, "--workspace", str(rt.workspace)], env=env, input=b"",
                                capture_output=True, timeout=60)
        assert result.returncode == 2, result.stderr
        assert b"more than a Unix socket's 107" in result.stderr


def test_the_server_s_environment_is_the_first_attach_s(rt):
    def echo(bridge) -> str:
        bridge.call("initialize", {})
        bridge.call("session/new", {})
        return bridge.call("bash", {"command": "echo $PI_TEST_FROM"})["output"].strip()

    first = rt.attach(env={"PI_TEST_FROM": "the first attach"})
    assert echo(first) == "the first attach"
    assert echo(rt.attach(env={"PI_TEST_FROM": "a later attach"})) == "the first attach"


def test_both_framings_pass_through_the_bridge_unchanged(rt):
    lsp_style = rt.attach(framing="content-length")
    assert lsp_style.call("initialize", {})["workspace"] == os.path.realpath(rt.workspace)
    assert lsp_style.raw_stdout.startswith(b"Content-Length: ")
    assert rt.attach().call("initialize", {})
