"""The server's socket: connections accepted (this user's only), served, counted; the idle exit.

Each accepted connection is served by the hub with a reader and a writer over the socket's
descriptor, as the plain daemon's are over stdin and stdout. The info file is rewritten when
the counts change. The server stops on SIGTERM/SIGINT/SIGHUP (runs aborted and persisted), or
once it has had no connection and no run for the idle timeout; the socket and the info go
first (a new ``attach`` starts a new server rather than reach this one), the lock last.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import time
from typing import Any

from ..rpc.hub import Hub
from ..wire.transport import FrameReader, FrameWriter
from . import instance
from .peer import credentials, refusal
from .runtime import Files

log = logging.getLogger(__name__)

FLUSH_TIMEOUT_S = 5.0


def bind(path: str) -> socket.socket:
    """A socket bound at ``path`` (any file there, a stale socket, is replaced), mode 0600. Not
    listening yet: until :meth:`Listener.run`, a connection is refused, not taken and dropped
    should the server fail to start."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # created 0600: never, for a moment, reachable by others
    try:
        listening.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    return listening


class Listener:
    def __init__(self, files: Files, listening: socket.socket, hub: Hub, *, idle_timeout: float,
                 max_frame_bytes: int, info: dict[str, Any]) -> None:
        self.files = files
        self.listening = listening
        self.hub = hub
        self.idle_timeout = idle_timeout
        self.max_frame_bytes = max_frame_bytes
        self.info = info
        self.connections: set[asyncio.Task[None]] = set()
        self.sockets: set[socket.socket] = set()
        self._stop = asyncio.Event()
        self._signals = 0
        self._written: tuple[int, int] | None = None
        hub.on_change = self.write_info

    # --- connections -----------------------------------------------------------------

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                log.warning("accepting a connection failed: %s", exc)
                return
            why = refusal(credentials(conn))
            if why is not None:
                log.warning("%s", why)
                conn.close()
                continue
            conn.setblocking(True)
            task = asyncio.ensure_future(self._serve(conn))
            self.connections.add(task)
            task.add_done_callback(self._ended)
            self.write_info()

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.connections.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("a connection failed", exc_info=task.exception())
        self.write_info()

    async def _serve(self, conn: socket.socket) -> None:
        self.sockets.add(conn)
        fd = conn.fileno()
        writer = FrameWriter(fd)
        reader = FrameReader(fd, self.max_frame_bytes, writer)
        reader.start()
        try:
            await self.hub.serve_connection(reader, writer)
        finally:
            await asyncio.to_thread(writer.flush, FLUSH_TIMEOUT_S)
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            await asyncio.to_thread(reader.join, FLUSH_TIMEOUT_S)
            self.sockets.discard(conn)
            conn.close()

    # --- the info file and the idle exit ---------------------------------------------------

    def write_info(self) -> None:
        sessions, _ = self.hub.counts()
        counts = (sessions, len(self.connections))
        if counts == self._written or self._stop.is_set():
            return
        self._written = counts
        self.info.update(sessions=counts[0], connections=counts[1])
        try:
            instance.write_info(self.files.info, self.info)
        except OSError as exc:
            log.warning("the info file %s could not be written: %s", self.files.info, exc)

    def _idle(self) -> bool:
        return not self.connections and not self.hub.busy()

    def _on_signal(self) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(1)
        self._stop.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self._on_signal)
        self.listening.listen(64)
        self.listening.setblocking(False)
        loop.add_reader(self.listening.fileno(), self._accept)
        self.write_info()
        log.info("serving %s on %s; idle timeout %g s", self.files.workspace, self.files.socket, self.idle_timeout)
        tick = min(1.0, self.idle_timeout / 4)
        idle_since: float | None = None
        while not self._stop.is_set():
            try:
                await asyncio.wait_for(self._stop.wait(), tick)
            except TimeoutError:
                pass
            self.write_info()
            if not self._idle():
                idle_since = None
            elif idle_since is None:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since >= self.idle_timeout:
                log.info("no connection and no run for %g s: stopping", self.idle_timeout)
                self._stop.set()
        await self._close()

    async def _close(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.listening.fileno())
        self.listening.close()
        for path in (self.files.socket, self.files.info):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        await self.hub.close(abort=True)
        for conn in self.sockets:  # what the runs' end sent goes out, then each connection ends
            try:
                conn.shutdown(socket.SHUT_RD)
            except OSError:
                pass
        if self.connections:
            await asyncio.gather(*self.connections, return_exceptions=True)
        log.info("stopped")
