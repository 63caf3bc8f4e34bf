"""The server tests' runtime: a private runtime folder, attach bridges and servers as real
processes, and a teardown that leaves none of them running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from client import Daemon, clean_env

from pi_daemon.server.runtime import workspace_key

PI_DAEMON = str(Path(sys.executable).parent / "pi-daemon")
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n'


def gone(pid: int) -> bool:
    """The process has ended (a zombie nobody reaps counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except OSError:
        return True


def wait_until(condition, what: str, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.02)


class Runtime:
    """One test's runtime folder (short: a socket path must stay under 108 bytes) and workspace."""

    def __init__(self, workspace: Path) -> None:
        self.dir = tempfile.mkdtemp(prefix="pirt-")
        self.workspace = workspace
        workspace.mkdir(exist_ok=True)
        self.home = tempfile.mkdtemp(prefix="pih-")
        self.env = clean_env(home=self.home, cwd=str(workspace), XDG_RUNTIME_DIR=self.dir)
        self.bridges: list[Daemon] = []
        self.procs: list[subprocess.Popen] = []

    @property
    def folder(self) -> Path:
        return Path(self.dir) / "pi-daemon"

    def path(self, suffix: str, workspace: Path | None = None) -> Path:
        return self.folder / f"{workspace_key(str(workspace or self.workspace))}{suffix}"

    def info(self, workspace: Path | None = None) -> dict | None:
        try:
            return json.loads(self.path(".json", workspace).read_text())
        except (OSError, ValueError):
            return None

    def attach(self, *options: str, shell: bool = False, workspace: Path | None = None,
               env: dict[str, str] | None = None, framing: str = "ndjson") -> Daemon:
        """A bridge as a client (tests/rpc/client.py) sees it; ``shell``: through ``sh -c``, as ssh runs it."""
        command = [PI_DAEMON, "attach", "--workspace", str(workspace or self.workspace), "--model", "faux/echo",
                   *options]
        if shell:
            command = ["sh", "-c", " ".join(f"'{part}'" for part in command)]
        bridge = Daemon(cmd=command, cwd=str(self.workspace), framing=framing,
                        env={"XDG_RUNTIME_DIR": self.dir, "PI_DAEMON_HOME": self.home, **(env or {})})
        self.bridges.append(bridge)
        return bridge

    def run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("env", self.env)
        return subprocess.run([PI_DAEMON, *args], capture_output=True, timeout=60, **kw)

    def popen(self, *args: str, **kw) -> subprocess.Popen:
        kw.setdefault("env", self.env)
        proc = subprocess.Popen([PI_DAEMON, *args], **kw)
        self.procs.append(proc)
        return proc

    def server_pid(self, workspace: Path | None = None) -> int:
        return wait_until(lambda: (self.info(workspace) or {}).get("pid"), "the server's info file")

    def processes(self) -> list[int]:
        """Every process started with this runtime folder: servers (and their keepers), bridges."""
        markers = {f"XDG_RUNTIME_DIR={self.dir}".encode(), f"TMPDIR={self.dir}".encode()}
        found = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = set(f.read().split(b"\0"))
            except OSError:
                continue
            if environ & markers and int(pid) != os.getpid() and not gone(int(pid)):
                found.append(int(pid))
        return found

    def servers(self) -> list[int]:
        """The ``serve`` processes of this runtime folder (not their keepers, forks of theirs)."""
        def command(pid: int) -> list[bytes]:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    return f.read().split(b"\0")
            except OSError:
                return []

        def parent(pid: int) -> int:
            try:
                with open(f"/proc/{pid}/stat", "rb") as f:
                    return int(f.read().rsplit(b")", 1)[1].split()[1])
            except OSError:
                return 0

        return [pid for pid in self.processes() if b"serve" in command(pid) and b"serve" not in command(parent(pid))]

    def stop(self) -> None:
        for bridge in self.bridges:
            bridge.kill()
        pids = self.processes()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)  # a keeper ignores it: it goes with its server
            except OSError:
                pass
        for pid in pids:
            wait_until(lambda: gone(pid), f"process {pid} to stop")
        for proc in self.procs:
            proc.wait(10)
