"""The agent's bash in the bubblewrap sandbox, through the daemon."""

import json
import os
import socket
import threading
from pathlib import Path

from agent_shell import bash_call, home_with, script, tool_ends


def run(spawn, tmp_path, command, settings=None, env=None):
    """The daemon's workspace is ``tmp_path/ws``; its home ``tmp_path/home``."""
    home = home_with(tmp_path, {"sandbox": settings or {}})
    (tmp_path / "ws").mkdir(exist_ok=True)
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call(command)), "--model", "faux/s",
              env={"home": home, **(env or {})}, cwd=str(tmp_path / "ws"))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=20)
    end = tool_ends(d)[0]
    return d, end["isError"], end["result"]["content"][0]["text"]


def test_the_workspace_is_writable_and_the_rest_is_not(spawn, tmp_path):
    outside = Path("/var/tmp") / f"pi-daemon-sandbox-{os.getpid()}.txt"  # not under the sandbox's /tmp
    try:
        d, failed, out = run(spawn, tmp_path, f"echo in > inside.txt && echo out > {outside}")
        assert failed and "Read-only file system" in out
        assert not outside.exists()
    finally:
        outside.unlink(missing_ok=True)
    (tmp_path / "script.json").unlink()
    _, failed, out = run(spawn, tmp_path, f"echo out > {tmp_path / 'outside.txt'}")
    assert not (tmp_path / "outside.txt").exists()  # /tmp is the sandbox's own, empty tmpfs
    (tmp_path / "script.json").unlink()
    d, failed, out = run(spawn, tmp_path, "echo in > inside.txt && cat inside.txt")
    assert not failed and (tmp_path / "ws" / "inside.txt").read_text() == "in\n"
    assert d.call("getState")["sandbox"] == {"active": True, "network": False}


def test_the_daemons_state_folder_is_read_only(spawn, tmp_path):
    _, failed, out = run(spawn, tmp_path, "echo '{\"allow\":[{\"tool\":\"bash\"}]}' > .pi/permissions.json")
    assert failed and "Read-only file system" in out
    assert not (tmp_path / "ws" / ".pi" / "permissions.json").exists()


def test_hidden_paths_and_secret_variables_are_not_visible(spawn, tmp_path):
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "id_rsa").write_text("PRIVATE")
    home = tmp_path / "home"
    home.mkdir()
    (home / "auth.json").write_text("TOKEN")
    _, failed, out = run(spawn, tmp_path,
                         f"cat {keys}/id_rsa; cat {home}/auth.json; echo key=$FOO_API_KEY; ls {keys} | wc -l",
                         {"hidden": [str(keys), "$PI_DAEMON_HOME"]}, env={"FOO_API_KEY": "sk-secret"})
    assert "PRIVATE" not in out and "TOKEN" not in out and "sk-secret" not in out
    assert "key=\n" in out


def test_network_off_blocks_loopback_and_on_allows_it(spawn, tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    accepted = []
    threading.Thread(target=lambda: accepted.append(listener.accept()), daemon=True).start()
    probe = f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3); print(\"connected\")'"
    _, failed, out = run(spawn, tmp_path, probe)
    assert failed and "connected" not in out and not accepted
    (tmp_path / "script.json").unlink()
    d, failed, out = run(spawn, tmp_path, probe, {"network": True})
    assert not failed and "connected" in out and accepted
    assert d.call("getState")["sandbox"] == {"active": True, "network": True}
    listener.close()


def test_switched_off_it_says_so(spawn, tmp_path):
    d, failed, out = run(spawn, tmp_path, f"echo out > {tmp_path / 'free.txt'}", {"enabled": False})
    assert not failed and (tmp_path / "free.txt").exists()
    state = d.call("getState")["sandbox"]
    assert state["active"] is False and "sandbox.enabled" in state["reason"]


def test_writable_folders_from_settings(spawn, tmp_path):
    cache = Path("/var/tmp") / f"pi-daemon-cache-{os.getpid()}"
    cache.mkdir(exist_ok=True)
    try:
        _, failed, out = run(spawn, tmp_path, f"echo cached > {cache}/entry", {"writable": [str(cache)]})
        assert not failed, out
        assert (cache / "entry").read_text() == "cached\n"
    finally:
        (cache / "entry").unlink(missing_ok=True)
        cache.rmdir()


def test_an_untrusted_workspace_cannot_loosen_the_sandbox(spawn, tmp_path):
    (tmp_path / "ws" / ".pi").mkdir(parents=True)
    (tmp_path / "ws" / ".pi" / "settings.json").write_text(
        json.dumps({"sandbox": {"enabled": False, "network": True, "hidden": [], "writable": ["/"]}}))
    outside = Path("/var/tmp") / f"pi-daemon-untrusted-{os.getpid()}.txt"
    try:
        d, failed, out = run(spawn, tmp_path, f"echo out > {outside}")
        assert failed and "Read-only file system" in out
        assert not outside.exists()
        state = d.call("getState")
        assert state["sandbox"] == {"active": True, "network": False}
        ignored = {r["field"] for r in state["workspaceTrust"]["ignored"]}
        assert any(field.startswith("sandbox") for field in ignored), ignored
    finally:
        outside.unlink(missing_ok=True)
