"""``pi-daemon --acp`` stopping: SIGTERM and the end of stdin close together, and nothing but the
daemon's own log lines reaches stderr."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

from client import clean_env


def test_sigterm_then_stdin_eof_prints_no_traceback(tmp_path):
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"protocolVersion": 1, "clientCapabilities": {}}}).encode() + b"\n"
    for _ in range(20):
        proc = subprocess.Popen([sys.executable, "-m", "pi_daemon", "--acp", "--model", "faux/echo"], cwd=tmp_path,
                                env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(init)
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving
        proc.send_signal(signal.SIGTERM)
        proc.stdin.close()
        assert proc.wait(20) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        assert b"Traceback" not in err and b"RuntimeError" not in err, err.decode()
