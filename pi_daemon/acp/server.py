"""``pi-daemon --acp``: the ACP face on the one wire (:mod:`pi_daemon.wire.peer`), over the host.

* stdin EOF — the editor is gone: runs are aborted (nobody could answer a permission
  request or see the result), persisted with their queued input, and the process exits 0.
* SIGTERM / SIGINT / SIGHUP — the same; a second signal exits at once.
* Either way no process a command started outlives the daemon (see :mod:`pi_daemon.procs`).

Settings, permissions, slash commands and workspace trust are the host's, the same as the
native face's: the same ``settings.json``, remembered answers, ``--allow``, templates and
skills. ACP has no trust request, so an untrusted workspace stays untrusted here unless
pi-daemon was started with ``--trust-workspace`` or the user trusted it from another
client (the trust answer lives in the user's home configuration, so trusting it once
from VS Code counts here).

``initialize`` (and ``authenticate``, ``logout``) is answered with the wire and the models
loaded alone: the session layer, the host and :class:`.agent.AcpAgent` are imported and made
once that answer is written, or at the first other request, whichever comes first
(:attr:`AcpFace.agent`). :data:`AGENT_METHODS` and :data:`EXTENSION_METHODS` say which
methods they serve, so the peer knows them all from the start.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Coroutine

from .. import procs
from ..guard import trust
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..wire.errors import InvalidParams, InvalidRequest, ModelUnavailableError, RpcError
from ..wire.incoming import ACP_CANCEL
from ..wire.peer import Peer
from ..wire.transport import FrameReader, FrameWriter
from .initialize import AcpClient, authenticate, initialize, logout

if TYPE_CHECKING:
    from ..host.host import Host
    from .agent import AcpAgent

log = logging.getLogger(__name__)

Handler = Callable[[dict[str, Any]], Awaitable[Any]]

AGENT_METHODS = {  # ACP method -> the AcpAgent method that serves it
    "session/new": "new_session", "session/load": "load_session", "session/resume": "resume_session",
    "session/close": "close_session", "session/delete": "delete_session", "session/list": "list_sessions",
    "session/prompt": "prompt", "session/set_mode": "set_mode", "session/set_config_option": "set_config_option",
    "session/cancel": "cancel",  # a notification
}
EXTENSION_METHODS = ("_pi/steer", "_pi/followUp", "_pi/clearQueue", "_pi/compact", "_pi/setName", "_pi/getState",
                     "_pi/session/rewind", "_pi/session/tree")  # served by .extensions


class AcpFace:
    """One connection. Without ``--workspace`` the workspace is the ``cwd`` of the first
    session the client opens (``session/new``, ``session/load``, ``session/list``):
    editors start agents in various folders but always name the project there."""

    def __init__(self, reader: FrameReader, writer: FrameWriter, *, workspace: str, registry: Any,
                 default_model: Any, allowed_tools: tuple[str, ...] = (), permission_timeout: float | None = None,
                 workspace_given: bool = True, faux_script: str | None = None, model: str | None = None,
                 trust_workspace: bool = False, settle: Callable[[], None] | None = None) -> None:
        self.registry = registry
        self.settle = settle
        self.client = AcpClient()
        self.allowed_tools = allowed_tools
        self.permission_timeout = permission_timeout
        self.faux_script = faux_script
        self.model = model
        self.trust_workspace = trust_workspace
        self.peer = Peer(reader, writer, self._on_eof, ACP_CANCEL)
        self.workspace = workspace
        self.default_model = default_model
        self.workspace_given = workspace_given
        self._agent: AcpAgent | None = None
        self._made: asyncio.Future[None] | None = None  # set while initialize's answer is on its way
        self._extensions: dict[str, Handler] = {}
        self.host: Host | None = None
        self._stopping = False
        self._signals = 0
        self._done = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()  # work the face started in the background
        self._register()

    @property
    def agent(self) -> AcpAgent:
        """The sessions' side of the face, made on first use (with the host of ``--workspace``)."""
        if self._agent is None:
            from .agent import AcpAgent
            from .extensions import methods as extension_methods

            self._agent = AcpAgent(self.peer, self.client, self.workspace, self.open_workspace)
            self._extensions = extension_methods(self._agent)
            if self.workspace_given:
                self._open(self.workspace, self.registry, self.default_model)
            if self.settle is not None:
                self.settle()
        return self._agent

    def open_workspace(self, folder: str) -> None:
        """The first session names the workspace: its models, settings, trust and session folder."""
        if not os.path.isdir(folder):
            raise InvalidParams(f"invalid params: params.cwd: {folder} is not a directory")
        if self.trust_workspace:
            trust.trust_for_this_run(folder)
        try:
            registry = ModelRegistry.load(folder, faux_script=self.faux_script)
            default_model = registry.default(self.model)
        except (ModelUnavailable, OSError, ValueError) as exc:
            raise ModelUnavailableError(f"the models of {folder} cannot be loaded: {exc}") from None
        self._open(folder, registry, default_model)

    def _open(self, workspace: str, registry: Any, default_model: Any) -> None:
        from ..host.host import Host

        self.host = Host(workspace=workspace, registry=registry, default_model=default_model,
                         allowed_tools=self.allowed_tools, permission_timeout=self.permission_timeout,
                         asker=self.agent.ask_permission, on_open=self._watch, file_access=self._files)
        self.host.mcp.reload()  # only the user's servers until the workspace is trusted
        self.agent.attach(self.host)
        if self.client.initialized:  # opened by the first session: made ready after its answer
            self._prepare_soon()
        log.info("serving workspace %s; default model %s", workspace, default_model.spec if default_model else "none")

    def _prepare_soon(self) -> None:
        """Make the default model's provider ready while the client reads the answer."""
        if self.host is not None:
            task = asyncio.ensure_future(self.host.prepare())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _watch(self, session: Any) -> None:
        if self.host is not None:
            self.host.start_background()  # the servers start with the first session, in the background
        self.agent.watch(session)

    def _files(self, session_id: str, workspace: Any) -> Any:
        if not (self.client.read_text_file or self.client.write_text_file):
            return None
        from .files import EditorFiles

        return EditorFiles(workspace, self.peer, session_id,
                           read=self.client.read_text_file, write=self.client.write_text_file)

    # --- ACP's methods on the peer ------------------------------------------------------

    def _handler(self, serve: Handler, *, needs_init: bool = True) -> Callable[[Any], Coroutine[Any, Any, Any]]:
        """ACP's rules around a method: ``initialize`` first, params an object, a result an
        object, and a lower layer's refusal answered from the host's error table."""

        async def checked(params: Any) -> Any:
            if needs_init and not self.client.initialized:
                raise InvalidRequest("call initialize first")
            if params is None:
                params = {}
            if not isinstance(params, dict):
                raise InvalidParams("invalid params: params must be an object")
            try:
                result = await serve(params)
            except asyncio.CancelledError:
                raise
            except RpcError:
                raise
            except Exception as exc:  # noqa: BLE001 - a bug stays an internal error, logged by the peer
                from ..host.errors import as_rpc_error  # the lower layers' errors: loaded with the host

                error = as_rpc_error(exc)
                if error is None:
                    raise
                raise error from None
            return result if result is not None else {}

        return checked

    def _register(self) -> None:
        async def do_initialize(params: dict[str, Any]) -> Any:
            result = initialize(params, self.client, self.registry)  # the start-up registry: providers only
            task = asyncio.current_task()
            if task is not None and self._agent is None:  # the peer's reply is its first callback:
                loop = asyncio.get_running_loop()  # the agent is made on the turn after it
                self._made = loop.create_future()
                task.add_done_callback(lambda _: loop.call_soon(self._initialized))
            return result

        async def do_authenticate(params: dict[str, Any]) -> Any:
            return authenticate(self.host.registry if self.host else self.registry, params)

        async def do_logout(params: dict[str, Any]) -> Any:
            return logout(self.host.registry if self.host else self.registry)

        self.peer.requests["initialize"] = self._handler(do_initialize, needs_init=False)
        self.peer.requests["authenticate"] = self._handler(do_authenticate)
        self.peer.requests["logout"] = self._handler(do_logout)
        for name in (*AGENT_METHODS, *EXTENSION_METHODS):
            table = self.peer.notifications if name == "session/cancel" else self.peer.requests
            table[name] = self._handler(functools.partial(self._serve, name))

    async def _serve(self, name: str, params: dict[str, Any]) -> Any:
        """A method of the agent's (or an extension's), the agent made on the first one (once
        ``initialize``'s answer has left, when it is on its way)."""
        if self._made is not None:
            await asyncio.shield(self._made)
        agent = self.agent
        method = AGENT_METHODS.get(name)
        serve: Handler = getattr(agent, method) if method is not None else self._extensions[name]
        return await serve(params)

    def _initialized(self) -> None:
        """``initialize`` was answered: the agent is made now (with the host of ``--workspace``, whose
        default model's provider is then made ready while the client reads the answer)."""
        log.debug("initialize answered: the agent is made now")
        try:
            if not self._stopping:
                self.agent  # noqa: B018 - made by its first use
        finally:
            if self._made is not None and not self._made.done():
                self._made.set_result(None)

    # --- lifecycle ------------------------------------------------------------------

    def _on_eof(self) -> None:
        if self.host is not None:
            self.host.sessions.close_input()
        asyncio.ensure_future(self.finish())

    def on_signal(self) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(1)
        asyncio.ensure_future(self.finish())

    async def finish(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        if self.host is not None:
            await self.host.abort_runs()
        await self.peer.drain()
        if self.host is not None:
            await self.host.close()
        else:
            procs.kill_all()
        self._done.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        writer = self.peer.writer
        writer.attach(loop)

        def broken() -> None:
            asyncio.ensure_future(self.finish())

        writer.on_broken = broken
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_signal)
        self.peer.reader.attach(loop, self.peer.on_items)
        await self._done.wait()


def serve(reader: FrameReader, writer: FrameWriter, **options: Any) -> int:
    """Serve ACP on stdio until the editor is gone. ``settle`` (an option) is called once the agent
    is made: the start-up's long-lived objects are built."""

    async def main() -> None:
        await AcpFace(reader, writer, **options).run()

    asyncio.run(main())
    return 0
