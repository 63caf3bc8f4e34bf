"""The hub: one host served to one or more native connections.

The host (sessions, tools, models) is one; each connection (:class:`.server.NativeFace`) has
its own ``initialize``, client declarations, current session and requests. The hub is what
the host's callbacks reach, and routes them by session:

* events — one :class:`.notify.SessionStream` per session numbers them once and sends them to
  every connection holding the session (a subagent's: its parent's holders);
* requests to the user — to every holder that can answer, first answer wins (:mod:`.user_requests`);
* the editor (``fs/*``, ``workspace/applyEdit``, ``editor/*``) — the session's owner, the
  connection that last prompted in it (at first the one that opened it); with none, files are
  the disk's and language tools say no editor is attached.

``session/new`` and ``session/load`` make a connection a holder; ``session/load`` of a session
already open attaches to it at once, a run in progress included, and with ``fromSeq`` sends the
events the client missed (:meth:`Hub.attach`). With ``shared`` (a server with a socket), a
connection's end ends only that connection, and a session no connection holds is closed once
its run has settled; without it (plain stdio) the one connection's end stops the process.

The host is opened (:meth:`Hub.open`: its modules imported, settings, trust record, command
files and session folder read) when the hub is made under a server, and in plain stdio once
the answer to ``initialize`` is written, or at the first other request: a client's
``initialize`` is answered with the wire and the initialize path loaded alone. Every other
method waits for it (:meth:`Hub.opened`). So this module imports the host's modules where
they are first used, not at its top.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import os
import signal
import socket
import stat
import uuid
from typing import TYPE_CHECKING, Any, Callable, Literal

from ..wire.errors import InvalidParams
from ..wire.peer import ClientError
from ..wire.transport import FrameReader, FrameWriter
from .context import CURRENT
from .initialize import ClientState
from .server import NativeFace

if TYPE_CHECKING:
    from ..host.host import Host
    from ..llm.registry import ModelRegistry
    from ..session import AgentSession
    from .editor_files import EditorFiles
    from .editor_language import EditorLanguage
    from .notify import KeptBudget, Receiver, SessionStream
    from .user_requests import UserRequests
    from .workspace_trust import WorkspaceTrust

log = logging.getLogger(__name__)

EDITOR_TIMEOUT_S = 60.0
CatchUp = Literal["events", "replay"]


def after_reply(work: Callable[[], None]) -> None:
    """Run ``work`` once the reply of the request being handled has left: the peer's reply is the
    first callback of the handler's task, the writer writes the frames of a turn on the next."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    task.add_done_callback(lambda _: loop.call_soon(work))


class Hub:
    def __init__(self, *, workspace: str, registry: ModelRegistry, default_model: Any, max_frame_bytes: int,
                 allowed_tools: tuple[str, ...] = (), permission_timeout: float | None = None,
                 shared: bool = True) -> None:
        self.shared = shared
        self.max_frame_bytes = max_frame_bytes
        self.workspace = workspace
        self._host_options: dict[str, Any] = {
            "workspace": workspace, "registry": registry, "default_model": default_model,
            "allowed_tools": allowed_tools, "permission_timeout": permission_timeout}
        self.host: Host  # these three once open
        self.trust: WorkspaceTrust
        self.user: UserRequests
        self.is_open = False
        self._opening: asyncio.Future[None] | None = None
        self._when_open: list[Callable[[], None]] = []
        self.connections: list[NativeFace] = []
        self.holders: dict[str, dict[NativeFace, None]] = {}  # top-level session id -> its connections, in order
        self.catching_up: set[tuple[NativeFace, str]] = set()  # (connection, session id): sent a catch-up first
        self.parents: dict[str, str] = {}  # subagent session id -> its parent's
        self.owners: dict[str, NativeFace] = {}  # top-level session id -> its editor
        self.streams: dict[str, SessionStream] = {}
        self.counters: dict[str, int] = {}  # session id -> the last seq sent: for the life of the process
        self.kept_budget: KeptBudget  # the events every session keeps for catching up, together
        self.on_change: Callable[[], None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        if shared:
            self.open()

    # --- the host ----------------------------------------------------------------------

    def open(self) -> None:
        """Make the host (once): import it, read the workspace's settings, trust record, commands."""
        if self.is_open:
            return
        from ..host.host import Host
        from .notify import KeptBudget
        from .user_requests import UserRequests
        from .workspace_trust import WorkspaceTrust

        try:
            self.host = Host(**self._host_options, asker=self._ask_permission, on_open=self._opened,
                             on_close=self._closed, file_access=self._files, language=self._language,
                             questions=self._questions)
            self.trust = WorkspaceTrust(self.host)
            self.trust.on_unanswered = self.ask_trust
            self.trust.report()
        except Exception as exc:  # a bug: the requests waiting for the host are answered with it
            if self._opening is not None and not self._opening.done():
                self._opening.set_exception(exc)
            raise
        self.kept_budget = KeptBudget()
        self.user = UserRequests(self.host, self.shared, self.holding, self.root)
        self.is_open = True
        default = self.host.sessions.default_model
        log.info("serving workspace %s; default model %s", self.workspace, default.spec if default else "none")
        if self._opening is not None and not self._opening.done():
            self._opening.set_result(None)  # the requests waiting for it go on after what follows
        for work in self._when_open:
            work()
        self._when_open.clear()

    async def opened(self) -> None:
        """Return once the host is open; open it now when nothing has planned to (a client that
        did not start with ``initialize``)."""
        if self.is_open:
            return
        if self._opening is None:
            self.open()
            return
        await asyncio.shield(self._opening)

    def open_after_reply(self, then: Callable[[], None]) -> None:
        """``initialize``'s handler: open the host once its answer is written (at once when it is
        open), then ``then`` — before any request waiting for the host goes on."""
        if self.is_open:
            then()
            return
        self._when_open.append(then)
        if self._opening is None:
            self._opening = asyncio.get_running_loop().create_future()
            after_reply(self.open)

    def when_open(self, work: Callable[[], None]) -> None:
        """``work`` now if the host is open, else once it is (if it ever is)."""
        if self.is_open:
            work()
        else:
            self._when_open.append(work)

    # --- the server's view -------------------------------------------------------------

    async def serve_connection(self, reader: FrameReader, writer: FrameWriter) -> None:
        """Serve one connection (its reader started, neither attached to a loop); returns when it has ended."""
        await self.serve(self.connect(reader, writer))

    def connect(self, reader: FrameReader, writer: FrameWriter) -> NativeFace:
        connection = NativeFace(self, reader, writer)
        self.connections.append(connection)
        self._changed()
        return connection

    async def serve(self, connection: NativeFace) -> None:
        try:
            await connection.run()
        finally:
            self.leave(connection)

    def busy(self) -> bool:
        """A run is active, or a permission, question or trust question is pending."""
        return (any(s.busy for s in self.host.sessions.sessions.values()) or self.user.busy()
                or self.trust.pending)

    def counts(self) -> tuple[int, int]:
        """(open sessions, connections)."""
        return len(self.host.sessions.sessions), len(self.connections)

    async def close(self, abort: bool = True) -> None:
        """The last step: runs aborted (or waited for) and persisted, the host closed, then every
        connection ended (its requests in flight answered; :meth:`serve_connection` returns)."""
        self.trust.cancel()
        if abort:
            await self.host.abort_runs()
        else:
            await self.host.sessions.wait_all_settled()
        await self.host.close()
        for connection in list(self.connections):
            connection.request_exit()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:  # noqa: BLE001 - the server's bookkeeping never breaks a request
                log.exception("on_change failed")

    def background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- who holds what ------------------------------------------------------------------

    def root(self, session_id: str) -> str:
        """The top-level session whose connections answer for ``session_id`` (a subagent's parent)."""
        while session_id in self.parents:
            session_id = self.parents[session_id]
        return session_id

    def holding(self, root: str) -> list[NativeFace]:
        return list(self.holders.get(root, {}))

    def _receivers(self, session_id: str) -> list[Receiver]:
        return [c for c in self.holding(self.root(session_id))
                if not c.gone and (c, session_id) not in self.catching_up]

    def hold(self, connection: NativeFace, session: AgentSession) -> None:
        """``connection`` holds ``session`` (opened or loaded it): it gets its events; it is its current one."""
        root = self.root(session.id)
        self.holders.setdefault(root, {})[connection] = None
        owner = self.owners.get(root)
        if owner is None or owner.gone:
            self.owners[root] = connection
        if root == session.id:
            connection.current = session

    def own(self, connection: NativeFace, session: AgentSession) -> None:
        self.owners[self.root(session.id)] = connection

    def leave(self, connection: NativeFace) -> None:
        """A connection ended: it holds nothing any more; a session nobody holds closes once settled."""
        if connection not in self.connections:
            return
        self.connections.remove(connection)
        connection.gone = True
        self.catching_up = {(c, s) for c, s in self.catching_up if c is not connection}
        for root, holders in list(self.holders.items()):
            if connection in holders:
                del holders[connection]
                if not holders and self.shared:
                    self.background(self._close_when_settled(root))
        for root, owner in list(self.owners.items()):
            if owner is connection:
                del self.owners[root]
        self._changed()

    async def release(self, connection: NativeFace, session: AgentSession) -> None:
        """``session/close``: the connection stops holding the session; it closes when nobody else holds it."""
        root = self.root(session.id)
        holders = self.holders.get(root, {})
        holders.pop(connection, None)
        if self.owners.get(root) is connection:
            del self.owners[root]
        if not self.shared or root != session.id or not holders:
            await self.host.sessions.close(session)
        elif connection.current is session:
            connection.current = self._last_held(connection)
        self._changed()

    def _last_held(self, connection: NativeFace) -> AgentSession | None:
        open_sessions = self.host.sessions.sessions
        held = [open_sessions[root] for root, holders in self.holders.items()
                if connection in holders and root in open_sessions]
        return held[-1] if held else None

    async def _close_when_settled(self, root: str) -> None:
        session = self.host.sessions.sessions.get(root)
        if session is None:
            return
        await session.wait_settled()
        if not self.holders.get(root) and self.host.sessions.sessions.get(root) is session and not self.host.stopping:
            log.info("session %s: no client holds it and its run has settled: closed", root)
            await self.host.sessions.close(session)

    # --- the host's callbacks -----------------------------------------------------------

    def _opener(self) -> NativeFace | None:
        """The connection whose request (or run) is opening a session now."""
        ctx = CURRENT.get()
        return ctx.connection if ctx is not None else None

    def _opened(self, session: AgentSession) -> None:
        from .notify import STUCK_S, SessionStream

        if session.parent_session_id is not None and session.parent_session_id in self.host.sessions.sessions:
            self.parents[session.id] = session.parent_session_id
        stream = SessionStream(session.id, functools.partial(self._receivers, session.id), self.counters,
                               stuck_after=STUCK_S if self.shared else None, on_stuck=self._stuck,
                               budget=self.kept_budget)
        self.streams[session.id] = stream
        session.subscribe(stream)
        opener = self._opener()
        if session.id not in self.parents and opener is not None and not opener.gone:
            self.hold(opener, session)
        self._changed()

    def _closed(self, session: AgentSession) -> None:
        stream = self.streams.pop(session.id, None)
        if stream is not None:
            stream.forget()
        self.parents.pop(session.id, None)
        self.owners.pop(session.id, None)
        self.holders.pop(session.id, None)
        self.catching_up = {(c, s) for c, s in self.catching_up if s != session.id}
        for connection in self.connections:
            if connection.current is session:
                connection.current = self._last_held(connection)
        self._changed()

    def _stuck(self, receiver: Receiver) -> None:
        connection = next((c for c in self.connections if c is receiver), None)
        if connection is not None:
            disconnect(connection.reader, connection.writer)
            self.leave(connection)

    def _ask_permission(self, *args: Any) -> Any:
        return self.user.ask_permission(*args)

    def _questions(self, session_id: str) -> Any:
        opener = self._opener()
        return self.user.questions_for(session_id, opener is not None and opener.client.ask_user)

    def editor_client(self, session_id: str) -> ClientState:
        """The declarations of the session's editor now (nothing declared when none is attached)."""
        owner = self.owners.get(self.root(session_id))
        return owner.client if owner is not None and not owner.gone else ClientState()

    def _files(self, session_id: str, view: Any) -> EditorFiles:
        from .editor_files import EditorFiles

        return EditorFiles(view, functools.partial(self.ask_editor, session_id), session_id,
                           functools.partial(self.editor_client, session_id))

    def _language(self, session_id: str) -> EditorLanguage | None:
        from .editor_language import EditorLanguage, features_of

        opener = self._opener()
        if opener is None or not features_of(opener.client):
            return None
        return EditorLanguage(functools.partial(self.ask_editor, session_id), session_id, opener.client)

    async def ask_editor(self, session_id: str, method: str, params: dict[str, Any]) -> Any:
        """An ``fs/*``, ``workspace/applyEdit`` or ``editor/*`` request to the session's editor; every
        failure is an OSError for the tool."""
        owner = self.owners.get(self.root(session_id))
        if owner is None or owner.gone or owner.peer.closed:
            raise OSError(errno.EPIPE, f"no editor is attached to this session; {method} cannot be asked")
        try:
            return await owner.peer.request(method, params, timeout=EDITOR_TIMEOUT_S,
                                            msg_id=f"fs-{uuid.uuid4().hex[:12]}")
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT,
                          f"the editor did not answer {method} within {EDITOR_TIMEOUT_S:g} s") from None
        except ClientError as exc:
            raise OSError(errno.EIO, f"the editor answered {method} with an error: {exc}") from None

    def ask_trust(self) -> None:
        """Ask a connection that can answer the workspace trust question, if it is still open."""
        self.trust.maybe_ask([c.peer for c in self.connections if c.client.workspace_trust and not c.gone])

    # --- session/load --------------------------------------------------------------------

    def attach(self, connection: NativeFace, session: AgentSession, from_seq: int | None,
               replay: bool) -> tuple[int, CatchUp | None]:
        """``connection`` loaded ``session``: it holds it, and after the reply gets what it asked for
        — the events from ``from_seq`` on when still kept ("events"), else a replay from the file
        then the events of the message in progress ("replay"), or (``replay`` alone) the same replay
        (a client drawing from nothing, a reloaded window, sees the answer streaming) — then the
        live events. Returns the next live seq and the catch-up."""
        stream = self.streams[session.id]
        next_seq = stream.seq + 1
        catch_up: CatchUp | None = None
        if from_seq is not None:
            if from_seq < 1:
                raise InvalidParams("invalid params: params.fromSeq: 1 or more (the first seq not seen)")
            catch_up = "events" if from_seq <= next_seq and stream.since(from_seq) is not None else "replay"
        self.hold(connection, session)
        self._changed()
        if catch_up is None and not replay:
            after_reply(lambda: self.user.offer(connection, self.root(session.id)))
            return next_seq, None
        self.catching_up.add((connection, session.id))
        first = from_seq if catch_up == "events" else None
        after_reply(lambda: self.background(self._catch_up(connection, session, stream, first)))
        return next_seq, catch_up

    async def _catch_up(self, connection: NativeFace, session: AgentSession, stream: SessionStream,
                        first: int | None) -> None:
        """Send ``connection`` the kept events from ``first`` on, or a replay (then the events of the
        message not in the file yet), then whatever was sent meanwhile; then it is live."""
        if first is None:
            replayed = session.replay_events()  # the file as it is now: what was sent after this follows
            first = (stream.last_end if session.busy else stream.seq) + 1
            for event in replayed:
                if connection.gone:
                    return
                connection.send_frame(stream.replayed(event))
                await connection.writer.drain()
        kept = stream.since(first)
        if kept is None:
            log.warning("session %s: events from seq %d are no longer kept; a client catching up misses some",
                        session.id, first)
            kept = stream.since(stream.kept[0][0]) if stream.kept else []
        for body in kept or []:
            connection.send_frame(body)
        self.catching_up.discard((connection, session.id))  # no await since the last look: no gap
        self.user.offer(connection, self.root(session.id))


def disconnect(reader: FrameReader, writer: FrameWriter) -> None:
    """Cut a socket connection (both ways): its client sees the end, its reader its EOF."""
    for fd in {reader.fd, writer.fd}:
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)
            return
        except OSError as exc:
            log.debug("cutting a connection: %s", exc)


def serve(reader: FrameReader, writer: FrameWriter, *, settle: Callable[[], None], **options: Any) -> int:
    """Plain stdio: a hub with this one connection, until the daemon stops. ``settle`` is called
    once the host is open: the start-up's long-lived objects are built."""

    async def main() -> None:
        hub = Hub(shared=False, **options)
        hub.when_open(settle)
        loop = asyncio.get_running_loop()
        connection = hub.connect(reader, writer)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, connection.on_signal)
        await hub.serve(connection)
        log.info("stopped")

    asyncio.run(main())
    return 0
