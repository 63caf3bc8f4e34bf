"""The daemon: frames in, checked JSON-RPC messages to pygls, replies and events out.

pygls is loaded after start-up, not before it: frames that arrive earlier are served by
:mod:`.early` (see there), so the first prompt does not wait for the import.

Lifecycle:

* stdin EOF — no more input can come: requests in flight get their answers, active
  runs are allowed to settle (a shell pipe closes stdin right after its last request),
  then the process exits 0. Should stdout break, runs are aborted instead. A user
  command (``bash``) without a ``timeout`` is aborted at EOF: nothing else would end it.
* SIGTERM / SIGINT, or ``shutdown`` — runs are aborted and persisted, requests in
  flight get their answers, exit 0 (``shutdown`` waits for ``exit`` or EOF).
  A second signal exits at once.
* Either way, and on SIGKILL too (see :mod:`..procs`), no process a command started
  outlives the daemon.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import os
import signal
import typing
import uuid
from typing import TYPE_CHECKING, Any

from .. import procs
from ..converter import to_wire
from ..events import PermissionTimeout
from ..commands.catalog import Catalog
from ..llm.registry import ModelRegistry
from ..mcp.manager import McpManager
from ..session import AgentSession, SessionManager
from ..tools.permission_rules import Rule, describe
from ..tools.permissions import OUTCOMES, TIMED_OUT, PermissionGate
from ..tools.workspace import Workspace
from . import errors as E
from .early import REQUEST_ID, EarlyDispatcher, IdleLoad
from .errors import shorten
from .extensions import Background
from .framing import FrameError, dumps, encode
from .incoming import CANCEL_REQUEST, ID_RULE, cancel_target, Refused, message_object, valid_id
from .initialize import ClientState
from . import methods  # noqa: F401 (registers every method)
from .app import App
from .dispatch import feature
from .notify import EventSender
from .transport import EOF, FrameReader, FrameWriter
from .registry import METHODS
from .types import PERMISSION_REQUEST, PermissionOutcome, PermissionRequestParams, PermissionScope, Scope
from .workspace_trust import WorkspaceTrust

if TYPE_CHECKING:
    from .protocol import DaemonProtocol

log = logging.getLogger(__name__)

EDITOR_TIMEOUT_S = 60.0


class ClientRequestFailed(Exception):
    """The client answered a daemon request with an error."""


class Daemon:
    """Dispatch and transport: frames in, checked messages to pygls, replies and events out.

    What the methods act on is the composition root, :attr:`app` (:class:`.app.App`); the
    attributes below that forward to it are what handlers use.
    """

    def __init__(
        self,
        reader: FrameReader,
        writer: FrameWriter,
        *,
        workspace: str,
        registry: ModelRegistry,
        default_model: Any,
        max_frame_bytes: int,
        client: ClientState | None = None,
        allowed_tools: tuple[str, ...] = (),
        permission_timeout: float | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self._protocol: DaemonProtocol | None = None  # pygls, once loaded (see protocol)
        self._features = {name: feature(self, spec) for name, spec in METHODS.items()}
        self.early = EarlyDispatcher(self.send_frame, self._features.get)
        self._frames_in = 0
        self.engine_load = IdleLoad(lambda: self._frames_in + self.writer.frames, self._engine_ready)
        self.app = App(workspace=workspace, registry=registry, default_model=default_model,
                       max_frame_bytes=max_frame_bytes, client=client or ClientState(), allowed_tools=allowed_tools,
                       permission_timeout=permission_timeout, asker=self.ask_permission, on_open=self._watch,
                       ask_editor=self.ask_editor)
        self.background = Background(self)
        self.trust = WorkspaceTrust(self)
        self._stopping = False
        self._shutting_down = False
        self._eof = False
        self._signals = 0
        self._done = asyncio.Event()
        self._client_requests: set[Any] = set()

    @property
    def protocol(self) -> DaemonProtocol:
        """pygls's protocol; imports pygls here if the background load has not yet."""
        if self._protocol is None:
            from . import engine

            self._protocol = engine.build(self, self._features)
            self.engine_load.cancel()
            gc.freeze()  # lsprotocol's classes live as long as the process (see cli.settle_heap)
            log.debug("pygls loaded")
        return self._protocol

    def _engine_ready(self) -> None:
        self.protocol  # noqa: B018 (builds it, on the loop)

    @property
    def request_id(self) -> Any:
        """The id of the request being handled."""
        early = REQUEST_ID.get()
        return early if early is not None else self.protocol.msg_id

    # --- the composition root, as the handlers see it --------------------------------

    @property
    def workspace(self) -> str:
        return self.app.workspace

    @property
    def registry(self) -> ModelRegistry:
        return self.app.registry

    @property
    def client(self) -> ClientState:
        return self.app.client

    @property
    def max_frame_bytes(self) -> int:
        return self.app.max_frame_bytes

    @property
    def tools_workspace(self) -> Workspace:
        return self.app.tools_workspace

    @property
    def gate(self) -> PermissionGate:
        return self.app.gate

    @property
    def sessions(self) -> SessionManager:
        return self.app.sessions

    @property
    def permission_timeout(self) -> float:
        return self.app.permission_timeout

    @property
    def commands(self) -> Catalog:
        return self.app.commands

    @property
    def mcp(self) -> McpManager:
        return self.app.mcp

    @property
    def event_seqs(self) -> dict[str, int]:
        return self.app.event_seqs

    def apply_settings(self) -> None:
        self.app.apply_settings()

    # --- output ----------------------------------------------------------------------

    def send_frame(self, body: bytes) -> None:
        self.writer.write(encode(body, self.reader.framing))

    def send_error(self, request_id: Any, code: int, message: str) -> None:
        self.send_frame(dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}))

    def _watch(self, session: AgentSession) -> None:
        session.subscribe(EventSender(session.id, self.writer, self.send_frame, self.event_seqs))

    async def ask_permission(self, session_id: str, call_id: str, tool: str, args: dict[str, Any], title: str,
                             options: list[str], rule: Rule) -> str | None:
        """Ask the client (``permission/request``); None when it cannot be asked."""
        if not self.client.permissions or self._eof:
            return None
        params = to_wire(PermissionRequestParams(
            session_id=session_id, tool_call_id=call_id, tool_name=tool, args=args, title=title,
            options=typing.cast(list[PermissionOutcome], options),
            remember=PermissionScope(scope=typing.cast(Scope, rule.scope), pattern=rule.pattern, label=describe(rule)),
            timeout_seconds=self.permission_timeout))
        msg_id = f"permission-{uuid.uuid4().hex[:12]}"
        try:
            result = await self.request_client(PERMISSION_REQUEST.name, params, msg_id, self.permission_timeout)
        except TimeoutError:
            log.warning("permission/request %s was not answered within %g s: refused", msg_id,
                        self.permission_timeout)
            session = self.sessions.sessions.get(session_id)
            if session is not None:
                await session.observers.emit(PermissionTimeout(
                    tool_call_id=call_id, tool_name=tool, timeout_seconds=self.permission_timeout))
            return TIMED_OUT
        except ClientRequestFailed as exc:
            log.warning("permission/request %s failed: %s", msg_id, exc)
            return "cancelled"
        outcome = result.get("outcome") if isinstance(result, dict) else None
        return outcome if outcome in OUTCOMES else "cancelled"

    async def request_client(self, method: str, params: Any, msg_id: str, timeout: float) -> Any:
        """Send a request to the client and wait for its result; a timeout or cancellation
        withdraws it (``$/cancelRequest``). Raises TimeoutError or ClientRequestFailed."""
        from .engine import JsonRpcException

        future = asyncio.wrap_future(self.protocol.send_request(method, params, msg_id=msg_id))
        try:
            return await asyncio.wait_for(future, timeout)
        except (asyncio.CancelledError, TimeoutError):
            self.protocol._request_futures.pop(msg_id, None)
            if not self._eof:
                self.protocol.notify("$/cancelRequest", {"id": msg_id})
            raise
        except JsonRpcException as exc:
            raise ClientRequestFailed(str(exc)) from None

    async def ask_editor(self, method: str, params: dict[str, Any]) -> Any:
        """An ``fs/*`` or ``workspace/applyEdit`` request; every failure is an OSError for the tool."""
        if self._eof:
            raise OSError(errno.EPIPE, f"the editor has gone; {method} cannot be asked")
        try:
            return await self.request_client(method, params, f"fs-{uuid.uuid4().hex[:12]}", EDITOR_TIMEOUT_S)
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT,
                          f"the editor did not answer {method} within {EDITOR_TIMEOUT_S:g} s") from None
        except ClientRequestFailed as exc:
            raise OSError(errno.EIO, f"the editor answered {method} with an error: {exc}") from None

    # --- input -----------------------------------------------------------------------

    def on_items(self, items: list[Any]) -> None:
        self._frames_in += len(items)
        for item in items:
            try:
                if item is EOF:
                    self._on_eof()
                elif isinstance(item, FrameError):
                    self.send_error(None, E.FRAME_TOO_LARGE if item.too_large else E.PARSE_ERROR, item.message)
                else:
                    self.dispatch(item)
            except Exception:  # noqa: BLE001 - one bad frame never takes the ones after it along
                log.exception("a frame could not be handled")

    def dispatch(self, frame: bytes) -> None:
        try:
            message = self._checked(message_object(frame))
        except Refused as exc:
            if exc.reply:
                self.send_error(exc.request_id, exc.code, exc.message)
            else:
                log.warning("%s", exc.message)
            return
        if message is None:
            return
        kind, request_id, method, params = message
        if kind == "notification" and method == CANCEL_REQUEST:
            named, target = cancel_target(params)
            if not named or self.early.cancel(target):
                return  # nothing to cancel, or a request still running on the early path
            if self._protocol is None:
                log.debug("$/cancelRequest for unknown or finished request %r", target)
                return
        if self._protocol is None and kind != "response":
            if kind == "request":
                self.early.request(request_id, method, params)
            else:
                self.early.notification(method, params)
            return
        from . import engine

        if kind == "request":
            self.protocol.handle_message(engine.request(request_id, method, params))
        elif kind == "notification":
            self.protocol.handle_message(engine.notification(method, params))
        else:
            self.protocol.handle_message(engine.response(params))

    def _checked(self, data: dict[str, Any]) -> tuple[str, Any, str, Any] | None:
        """``(kind, id, method, params)`` of a valid message (for a response: ``params`` is
        the whole message); raises Refused for an invalid one."""
        has_id = "id" in data
        request_id = data.get("id")
        if not valid_id(request_id):
            raise Refused(None, E.INVALID_REQUEST, ID_RULE)
        if data.get("jsonrpc") != "2.0":
            raise Refused(request_id, E.INVALID_REQUEST, 'jsonrpc must be "2.0"')
        method = data.get("method")
        if method is None:
            if has_id and ("result" in data or "error" in data):
                return "response", request_id, "", data
            raise Refused(request_id, E.INVALID_REQUEST, "a request needs a method")
        if not isinstance(method, str):
            raise Refused(request_id, E.INVALID_REQUEST, "method must be a string")
        params = data.get("params")
        if not has_id:
            spec = METHODS.get(method)
            if spec is not None and spec.is_request:
                # JSON-RPC forbids answering a notification, so the log is the only place to say so.
                raise Refused(None, E.INVALID_REQUEST, f"{shorten(method)} is a request and was sent "
                              "without an id (as a notification); it was not run", reply=False)
            if method == CANCEL_REQUEST or method in METHODS:
                return "notification", None, method, params
            log.debug("ignored a notification of unknown method %s", shorten(method))
            return None
        if method not in METHODS:
            raise Refused(request_id, E.METHOD_NOT_FOUND, f"unknown method: {shorten(method)}")
        if self._shutting_down and method not in ("exit", "shutdown"):
            raise Refused(request_id, E.INVALID_STATE, "the daemon is shutting down")
        return "request", request_id, method, params

    def track_request(self, task: Any) -> None:
        self._client_requests.add(task)

    def untrack_request(self, task: Any) -> None:
        self._client_requests.discard(task)

    # --- lifecycle -------------------------------------------------------------------

    def _on_eof(self) -> None:
        self._eof = True
        self.sessions.close_input()
        asyncio.ensure_future(self._finish(abort=self.writer.broken))

    def on_signal(self) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(1)
        asyncio.ensure_future(self._finish(abort=True))

    def on_broken_pipe(self) -> None:
        asyncio.ensure_future(self._finish(abort=True))

    async def begin_shutdown(self) -> None:
        self._shutting_down = True
        self.trust.cancel()
        await self.sessions.abort_all()

    def request_exit(self) -> None:
        asyncio.ensure_future(self._finish(abort=True))

    async def _finish(self, *, abort: bool) -> None:
        if self._stopping and not abort:
            return
        first = not self._stopping
        self._stopping = True
        self._shutting_down = True
        self.trust.cancel()
        if abort:
            await self.sessions.abort_all()
        if first:
            await self._drain_requests()
            if not abort:
                await self.sessions.wait_all_settled()
            await self._drain_requests()
            self.sessions.close_files()  # fsync and release the locks
            await self.background.close()  # MCP servers stop
            procs.kill_all()  # nothing a command started outlives the daemon
            self._done.set()

    async def _drain_requests(self) -> None:
        # Daemon -> client requests can never be answered once stdin is closed.
        pending = self._protocol._request_futures if self._protocol is not None else {}
        for msg_id, future in list(pending.items()):
            if future not in self._client_requests and self._eof:
                future.cancel()
        while self._client_requests:
            await asyncio.wait(set(self._client_requests))
        for _ in range(3):  # let pygls's done-callbacks queue the replies
            await asyncio.sleep(0)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.writer.attach(loop)
        self.writer.on_broken = self.on_broken_pipe
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_signal)
        self.reader.attach(loop, self.on_items)
        self.engine_load.start()
        default = self.sessions.default_model
        log.info("serving workspace %s; default model %s", self.workspace,
                 default.spec if default else "none")
        self.trust.report()
        if self.client.initialized:  # answered by the fast path before the daemon started
            self.trust.maybe_ask()
            self.background.start_soon()
        else:  # a client that never sends initialize (a shell pipe) gets its servers all the same
            self.background.start_soon(delay=0.5)
        await self._done.wait()
        log.info("stopped")


def serve(reader: FrameReader, writer: FrameWriter, *, pending: list[Any], **options: Any) -> int:
    """Run the daemon until it stops; ``pending`` are frames read before it started."""

    async def main() -> None:
        daemon = Daemon(reader, writer, **options)
        if pending:
            asyncio.get_running_loop().call_soon(daemon.on_items, pending)
        await daemon.run()

    asyncio.run(main())
    return 0
