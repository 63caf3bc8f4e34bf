"""The daemon over real pipes: framing in kind, big and oversize frames, clean stdout."""

import json
import sys

from client import Daemon, clean_env
from pi_daemon.client import daemon_command


def test_ndjson_client_gets_ndjson(spawn):
    d = spawn("--model", "faux/echo")
    assert d.call("initialize", {"protocolVersion": 1})["protocolVersion"] == 1
    assert d.raw_stdout.startswith(b'{"jsonrpc":"2.0","id":1')
    assert d.close() == 0


def test_content_length_client_gets_content_length(spawn):
    d = spawn("--model", "faux/echo", framing="content-length")
    d.call("initialize", {})
    d.call("prompt", {"text": "ünïcode ✓"})
    d.wait_event("agent_settled")
    assert d.raw_stdout.startswith(b"Content-Length: ")
    assert "ünïcode ✓" in d.texts()  # byte-exact lengths, or the client would have choked
    assert d.close() == 0


def test_line_separators_inside_strings_do_not_split_frames(spawn):
    d = spawn("--model", "faux/echo")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "prompt",
                       "params": {"text": "one\u2028two\u2029three"}}, ensure_ascii=False)
    d.send_raw(body.encode() + b"\r\n")
    assert d.wait_response(1)["result"]["disposition"] == "started"
    d.wait_event("agent_settled")
    assert "one\u2028two\u2029three" in d.texts()


def test_tens_of_mib_frame_works_and_oversize_frame_is_refused(spawn):
    d = spawn("--model", "faux/echo", "--max-frame-bytes", str(40 * 1024 * 1024))
    big = "x" * (24 * 1024 * 1024)
    assert d.call("getState", {"padding": big})["isStreaming"] is False
    d.send_raw(b'{"jsonrpc":"2.0","id":"huge","method":"getState","params":{"p":"' + b"y" * (41 * 1024 * 1024) + b'"}}\n')
    d.wait_response(None)
    error = d.responses[None]["error"]
    assert error["code"] == -32005 and "exceeds the limit" in error["message"]
    assert d.call("getState")["isStreaming"] is False  # the connection lives on
    assert "huge" not in d.responses


def test_stdout_carries_protocol_bytes_only(tmp_path):
    # A print() and a child process writing to fd 1 inside the daemon both land on stderr.
    code = (
        "import os, pi_daemon.llm.faux as f\n"
        "orig = f.echo_reply\n"
        "def noisy(ctx):\n"
        "    print('PRINTED-NOISE')\n"
        "    os.system('echo CHILD-NOISE')\n"
        "    return orig(ctx)\n"
        "f.echo_reply = noisy\n"
        "from pi_daemon.cli import main\n"
        "main(['--model', 'faux/echo', '--log-level', 'info', '--log-file', 'daemon.log'])\n"
    )
    d = Daemon(cmd=[sys.executable, "-c", code], cwd=str(tmp_path))
    try:
        d.call("prompt", {"text": "hi"})
        d.wait_event("agent_settled")
        assert d.close() == 0
    finally:
        d.kill()
    for line in d.raw_stdout.splitlines():
        json.loads(line)  # every stdout line is a protocol message
    assert b"NOISE" not in d.raw_stdout
    assert b"PRINTED-NOISE" in d.stderr and b"CHILD-NOISE" in d.stderr
    log = (tmp_path / "daemon.log").read_text()
    assert "INFO" in log


def test_version_and_help():
    import subprocess
    out = subprocess.run(daemon_command("--version"), env=clean_env(), capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("pi-daemon ")
    out = subprocess.run(daemon_command("--help"), env=clean_env(), capture_output=True, text=True)
    assert out.returncode == 0 and "--model" in out.stdout and "--workspace" in out.stdout
    out = subprocess.run(daemon_command("--model", "nope/never"), env=clean_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "unknown model nope/never" in out.stderr
    out = subprocess.run(daemon_command("--workspace", "/does/not/exist"), env=clean_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "not a directory" in out.stderr
