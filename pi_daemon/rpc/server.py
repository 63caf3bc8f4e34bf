"""The native face: one connection speaking the daemon's own protocol (:mod:`pi_daemon.wire.peer`),
served by the hub (:mod:`.hub`) that owns the host.

Plain stdio (``pi-daemon``) is a hub with one connection, whose end is the process's:

* stdin EOF — no more input can come: requests in flight get their answers, active
  runs are allowed to settle (a shell pipe closes stdin right after its last request),
  then the process exits 0. Should stdout break, runs are aborted instead. A user
  command (``bash``) without a ``timeout`` is aborted at EOF: nothing else would end it.
* SIGTERM / SIGINT, or ``shutdown`` — runs are aborted and persisted, requests in
  flight get their answers, exit 0 (``shutdown`` waits for ``exit`` or EOF).
  A second signal exits at once.
* Either way, and on SIGKILL too (see :mod:`..procs`), no process a command started
  outlives the daemon.

Under a server with several connections (the hub's ``shared``), a connection's end (EOF, a
broken output, ``exit``) ends that connection only: requests in flight get their answers,
runs go on (``shutdown`` aborts nothing; the connection takes no more requests but ``exit``),
and the server decides when the process ends.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING

from ..wire.framing import encode
from ..wire.peer import Peer
from ..wire.transport import FrameReader, FrameWriter
from .context import Context
from .dispatch import feature
from .initialize import ClientState
from .methods import served

if TYPE_CHECKING:
    from ..host.host import Host
    from ..session import AgentSession
    from .hub import Hub

log = logging.getLogger(__name__)


class NativeFace:
    """One connection: its peer, its client's declarations, its Context and current session."""

    def __init__(self, hub: Hub, reader: FrameReader, writer: FrameWriter) -> None:
        self.hub = hub
        self.reader = reader
        self.writer = writer
        self.peer = Peer(reader, writer, self._on_eof)
        self.client = ClientState()
        self.current: AgentSession | None = None
        self.gone = False  # the hub let it go: nothing more is sent to it
        self.ctx = Context(self, self.client, hub.max_frame_bytes, after_initialize=self._after_initialize,
                           begin_shutdown=self.begin_shutdown, request_exit=self.request_exit)
        for name, is_request in served().items():  # a handler's module is imported on its first call
            table = self.peer.requests if is_request else self.peer.notifications
            table[name] = feature(self.ctx, name, self._refuse_while_stopping)
        self._stopping = False
        self._shutting_down = False
        self._signals = 0
        self._done = asyncio.Event()

    @property
    def host(self) -> Host:
        return self.hub.host

    def _refuse_while_stopping(self, method: str) -> bool:
        return self._shutting_down and method not in ("exit", "shutdown")

    def send_frame(self, body: bytes) -> None:
        self.writer.write(encode(body, self.reader.framing))

    # --- lifecycle -------------------------------------------------------------------

    def _after_initialize(self) -> None:
        """Called by ``initialize``'s handler: the host (opened now, or once the answer is written,
        see :meth:`.hub.Hub.open_after_reply`) learns what the client declared before any later
        request of the connection is served."""
        self.hub.open_after_reply(self._initialized)

    def _initialized(self) -> None:
        self.host.tools_workspace.allow(self.client.allowed_roots)
        self.hub.background(self.host.prepare())
        loop = asyncio.get_running_loop()
        # Two turns of the loop: the initialize reply goes out first, then the daemon may ask.
        loop.call_soon(loop.call_soon, self.hub.ask_trust)
        loop.call_soon(loop.call_soon, self.host.start_background)

    def _on_eof(self) -> None:
        if self.hub.shared:
            asyncio.ensure_future(self._leave())
            return
        self.hub.when_open(lambda: self.host.sessions.close_input())  # a request still waiting for it opens it
        asyncio.ensure_future(self._finish(abort=self.writer.broken))

    def on_signal(self) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(1)
        asyncio.ensure_future(self._finish(abort=True))

    def on_broken_pipe(self) -> None:
        asyncio.ensure_future(self._leave() if self.hub.shared else self._finish(abort=True))

    async def begin_shutdown(self) -> None:
        self._shutting_down = True
        if not self.hub.shared:
            self.hub.trust.cancel()
            await self.host.abort_runs()

    def request_exit(self) -> None:
        asyncio.ensure_future(self._leave() if self.hub.shared else self._finish(abort=True))

    async def _leave(self) -> None:
        """Under a server: this connection ends; its requests in flight are answered first."""
        if self._stopping:
            return
        self._stopping = True
        self._shutting_down = True
        self.hub.leave(self)
        await self.peer.drain()
        self._done.set()

    async def _finish(self, *, abort: bool) -> None:
        """Plain stdio: the connection's end is the process's."""
        if self._stopping and not abort:
            return
        first = not self._stopping
        self._stopping = True
        self._shutting_down = True
        if self.hub.is_open:
            self.hub.trust.cancel()
            if abort:
                await self.host.abort_runs()
        if first:
            await self.peer.drain()
            if self.hub.is_open:  # else no request ever needed the host: nothing ran
                if not abort:
                    await self.host.sessions.wait_all_settled()
                await self.peer.drain()
                await self.host.close()
            self._done.set()

    async def run(self) -> None:
        """Serve until this connection has ended (plain stdio: until the daemon has stopped)."""
        loop = asyncio.get_running_loop()
        self.writer.attach(loop)
        self.writer.on_broken = self.on_broken_pipe
        self.reader.attach(loop, self.peer.on_items)
        if not self.hub.shared:
            loop.call_later(0.5, self._start_without_initialize)
        await self._done.wait()

    def _start_without_initialize(self) -> None:
        """A client that never sends initialize (a shell pipe) gets its servers all the same."""
        if not self.client.initialized and not self._stopping:
            self.hub.open()
            self.host.start_background()
