"""``pi-daemon attach``: stdin/stdout bridged byte for byte to the workspace's server, started
when none runs.

It is what an editor (or ``ssh host pi-daemon attach``) runs in place of the daemon, so its own
start-up is the connection's: it imports the standard library's sockets and threads, not the
daemon. A server it starts is detached (a session of its own, stdin and stdout /dev/null,
stderr to ``<key>.log``): it outlives this process and is stopped by its own idle timeout.
Its environment is this process's.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

from . import runtime

TYPE_CHECKING = False  # not typing's: see ..cli
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

START_TIMEOUT_S = 30.0  # a loaded machine may take seconds to start an interpreter
LOG_TAIL_BYTES = 4000


def _connect(path: str) -> socket.socket | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        conn.close()
        return None
    return conn


def _say(text: str) -> None:
    os.write(2, f"pi-daemon attach: {text}\n".encode(errors="replace"))


def _log_tail(path: str) -> str:
    try:
        with open(path, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - LOG_TAIL_BYTES))
            return log.read().decode(errors="replace")
    except OSError:
        return ""


def _lock_free(path: str) -> bool:
    from .instance import claim

    held = claim(path, wait=0, create=False)
    if held is not None:
        os.close(held)
        return True
    return not os.path.exists(path)


def _stop_if_redundant(server: subprocess.Popen[bytes], conn: socket.socket) -> None:
    """The server this attach started is stopped when the one it reached is another's (a racing
    attach's): still waiting for the lock, it would otherwise take it once that one has gone."""
    from .peer import credentials

    if server.poll() is None and credentials(conn).pid != server.pid:
        server.terminate()


def _start(files: runtime.Files, options: list[str]) -> socket.socket | None:
    """Start ``serve`` and connect to it; None (the server's log told) when it does not come up."""
    import subprocess

    command = [sys.executable, "-P", "-m", "pi_daemon", "serve", "--workspace", files.workspace, *options]
    log = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + START_TIMEOUT_S
    server: subprocess.Popen[bytes] | None = None
    try:
        while time.monotonic() < deadline:
            # Exit 1: another server holds the lock (a racing attach's, or one still on its way
            # out): connect to it, or start again once it has gone.
            if server is None or (server.poll() == 1 and _lock_free(files.lock)):
                server = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                                          cwd=files.workspace, start_new_session=True)
            conn = _connect(files.socket)
            if conn is not None:
                _stop_if_redundant(server, conn)
                return conn
            if server.poll() not in (None, 1):
                break
            time.sleep(0.01)
    finally:
        os.close(log)
    _say(f"the server did not start; the end of its log ({files.log}):\n{_log_tail(files.log)}")
    return None


def _options_differ(files: runtime.Files, options: list[str]) -> None:
    from .instance import read_info

    info = read_info(files.info)
    if info is not None and options and info.get("options") != options:
        _say(f"a server already runs for {files.workspace} (pid {info.get('pid')}); "
             f"these options are not applied: {' '.join(options)}")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def bridge(conn: socket.socket, meanwhile: Callable[[], None] = lambda: None) -> int:
    """Copy stdin to the socket and the socket to stdout until the socket's end (0), calling
    ``meanwhile`` once both run. stdin's end shuts the socket's sending side; a stdout nobody
    reads closes the connection."""

    def upstream() -> None:
        try:
            while data := os.read(0, 1 << 16):
                conn.sendall(data)
        except OSError:
            pass
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    threading.Thread(target=upstream, name="pi-daemon-attach-stdin", daemon=True).start()
    meanwhile()
    try:
        while data := conn.recv(1 << 16):
            _write_all(1, data)
    except OSError:
        pass
    return 0


def run(workspace: str, options: list[str]) -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # ^C ends the bridge, quietly
    try:
        files = runtime.files(workspace)
    except runtime.RuntimeFolderError as exc:
        _say(str(exc))
        return 2
    try:
        conn = _connect(files.socket)
        if conn is not None:  # the options are compared while the first frames go through
            return bridge(conn, lambda: _options_differ(files, options))
        conn = _start(files, options)
    except OSError as exc:  # not "nobody listens" (that starts a server): say what, as the system does
        _say(f"cannot reach the server of {files.workspace} at {files.socket}: {exc}")
        return 2
    return 2 if conn is None else bridge(conn)
