"""``pi-daemon serve``: claim the workspace's lock, bind its socket, serve until idle or stopped.

:func:`start` comes before the models are read, so a second server exits at once; the socket
listens only once they are read (:func:`run`), so an ``attach`` never reaches a server that then
fails to start. On the way out :func:`run` removes the files, the lock last.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import time
from typing import Any

import attrs

from .. import __version__
from ..rpc.hub import Hub
from ..settings import user_settings
from . import instance, runtime
from .listener import Listener, bind

log = logging.getLogger(__name__)

DEFAULT_IDLE_TIMEOUT_S = 600.0


@attrs.define
class Started:
    files: runtime.Files
    lock: int
    listening: socket.socket
    options: list[str]

    def abandon(self) -> None:
        """The server will not run after all: its files go, the lock last."""
        self.listening.close()
        instance.remove(self.files)
        os.close(self.lock)


def start(workspace: str, options: list[str]) -> Started | int:
    """The lock held and the socket bound; else an exit code (the reason printed)."""
    try:
        files = runtime.files(workspace)
    except runtime.RuntimeFolderError as exc:
        print(f"pi-daemon serve: {exc}", file=sys.stderr)
        return 2
    lock = instance.claim(files.lock)
    if lock is None:
        info = instance.read_info(files.info) or {}
        print(f"pi-daemon serve: a server already runs for {files.workspace}: pid {info.get('pid', '?')}, "
              f"socket {info.get('socket', files.socket)}", file=sys.stderr)
        return 1
    _restart_log(files.log)
    try:
        os.unlink(files.info)  # a stale server's
    except FileNotFoundError:
        pass
    try:
        listening = bind(files.socket)
    except OSError as exc:
        print(f"pi-daemon serve: cannot listen on {files.socket}: {exc}", file=sys.stderr)
        instance.remove(files)
        os.close(lock)
        return 2
    return Started(files, lock, listening, options)


def _restart_log(path: str) -> None:
    """A server started by ``attach`` writes to ``<key>.log`` (opened for appending: a server that
    loses the race to start appends its one line); the winner starts it afresh."""
    try:
        named, ours = os.stat(path), os.fstat(2)
    except OSError:
        return
    if (named.st_dev, named.st_ino) == (ours.st_dev, ours.st_ino):
        os.ftruncate(2, 0)


def idle_timeout(given: float | None) -> float:
    """``--idle-timeout``, else the user's ``server.idleTimeoutSeconds`` (never the workspace's), else 600."""
    if given is not None:
        return given
    value = user_settings().get("server", {}).get("idleTimeoutSeconds")
    if value is None:
        return DEFAULT_IDLE_TIMEOUT_S
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    log.warning("server.idleTimeoutSeconds must be a positive number of seconds, not %r: %g s is used",
                value, DEFAULT_IDLE_TIMEOUT_S)
    return DEFAULT_IDLE_TIMEOUT_S


def run(started: Started, *, idle_timeout: float, max_frame_bytes: int, **hub_options: Any) -> int:
    """Serve until idle or stopped; 0."""
    files = started.files
    info = {"workspace": files.workspace, "pid": os.getpid(), "socket": files.socket, "version": __version__,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "sessions": 0, "connections": 0,
            "options": started.options}

    async def main() -> None:
        hub = Hub(workspace=files.workspace, max_frame_bytes=max_frame_bytes, shared=True, **hub_options)
        await Listener(files, started.listening, hub, idle_timeout=idle_timeout, max_frame_bytes=max_frame_bytes,
                       info=info).run()

    try:
        asyncio.run(main())
    finally:
        instance.remove(files)
        os.close(started.lock)
    return 0
