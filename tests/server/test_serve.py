"""``pi-daemon serve``: one per workspace, its files, its idle exit, its stop."""

from __future__ import annotations

import json
import os
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


def test_sigterm_stops_the_server_and_its_bridges_and_removes_its_files(rt):
    server = _serve(rt)
    bridge = rt.attach()
    bridge.call("initialize", {})
    server.send_signal(signal.SIGTERM)
    assert server.wait(20) == 0
    assert bridge.proc.wait(20) == 0
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


def test_a_run_keeps_an_idle_server_up_after_its_client_has_gone(rt):
    """The idle timeout counts only time with no connection and no run: a run that streams on after
    its bridge was killed finishes, and is in the session's file, before the server exits."""
    answer = "streaming on " * 12
    script = rt.workspace.parent / "script.json"
    script.write_text(json.dumps({"chunkSize": 4, "delayMs": 100,
                                  "replies": [{"content": [{"type": "text", "text": answer}]}]}))
    bridge = rt.attach("--faux-script", str(script), "--model", "faux/script", "--idle-timeout", "1")
    bridge.call("initialize", {})
    bridge.call("session/new", {})
    bridge.call("prompt", {"text": "go"})
    bridge.wait_event("message_update")
    pid = rt.server_pid()
    bridge.proc.kill()
    wait_until(lambda: (rt.info() or {}).get("connections") == 0, "the bridge's connection to end")
    wait_until(lambda: gone(pid), "the server to exit once the run has ended", timeout=60)
    saved = "".join(p.read_text() for p in (rt.workspace / ".pi" / "sessions").glob("*.jsonl"))
    assert json.dumps(answer)[1:-1] in saved and '"aborted"' not in saved


def test_what_the_server_started_dies_with_it_even_when_it_is_killed(rt):
    bridge = rt.attach()
    bridge.call("initialize", {})
    bridge.call("session/new", {})
    pid_file = rt.workspace.parent / "sleeper.pid"
    bridge.request_async("bash", {"command": f"echo $$ > {pid_file}; exec sleep 300"})
    sleeper = wait_until(lambda: pid_file.exists() and pid_file.read_text().strip() and
                         int(pid_file.read_text()), "the command to start")
    assert not gone(sleeper)
    os.kill(rt.server_pid(), signal.SIGKILL)
    wait_until(lambda: gone(sleeper), "the server's command to die with it")


def test_another_user_s_connection_is_refused_before_a_byte_is_read(rt, tmp_path):
    """A real second user (the machine's root can be one): the folder and the socket opened up for
    them by hand, as a mistake would; the server still refuses them by their credentials."""
    assert os.geteuid() == 0 and os.path.exists("/usr/bin/python3"), "as another user: root, and a python3 they can run"
    log = tmp_path / "server.log"
    _serve(rt, "--log-file", str(log))
    os.chmod(rt.dir, 0o711)
    os.chmod(rt.folder, 0o711)
    os.chmod(rt.path(".sock"), 0o666)
    client = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
              "try:\n    s.sendall(sys.argv[2].encode())\n    print(repr(s.recv(65536)))\n"
              "except OSError as e:\n    print('closed:', e.strerror)")
    other = subprocess.run(["/usr/bin/python3", "-c", client, str(rt.path(".sock")),
                            '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'],
                           user=65534, group=65534, capture_output=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert other.stdout.strip() in (b"b''", b"closed: Broken pipe", b"closed: Connection reset by peer"), \
        other.stdout  # closed at once: no answer
    wait_until(lambda: log.exists() and b"from uid 65534" in log.read_bytes(), "the refusal in the log")
    os.chmod(rt.folder, 0o700)
    assert rt.attach().call("initialize", {})  # the user's own still connect
