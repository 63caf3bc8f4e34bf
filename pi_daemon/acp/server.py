"""``pi-daemon --acp``: the ACP face's lifecycle around one connection.

* stdin EOF — the editor is gone: runs are aborted (nobody could answer a permission
  request or see the result), persisted with their queued input, and the process exits 0.
* SIGTERM / SIGINT / SIGHUP — the same; a second signal exits at once.
* Either way no process a command started outlives the daemon (see :mod:`pi_daemon.procs`).

Settings, permissions and workspace trust are the native face's: the same
``settings.json``, remembered answers and ``--allow``. ACP has no trust request, so an
untrusted workspace stays untrusted here unless pi-daemon was started with
``--trust-workspace`` or the user trusted it from another client (the trust answer
lives in the user's home configuration, so trusting it once from VS Code counts here).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Any

from .. import procs, settings, trust
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..rpc import errors as E
from ..mcp.manager import McpManager
from ..session import SessionManager
from ..session.compaction import load_settings
from ..tools.permissions import ASK_DEFAULT, PermissionGate
from ..tools.workspace import Workspace
from .agent import AcpAgent
from .connection import AcpError, Connection
from .extensions import methods as extension_methods
from .files import EditorFiles
from .initialize import AcpClient, InitError, authenticate, initialize

log = logging.getLogger(__name__)


def _positive(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


class AcpServer:
    """One connection. Without ``--workspace`` the workspace is the ``cwd`` of the first
    session the client opens (``session/new``, ``session/load``, ``session/list``):
    editors start agents in various folders but always name the project there."""

    def __init__(self, reader: Any, writer: Any, *, workspace: str, registry: Any, default_model: Any,
                 client: AcpClient, allowed_tools: tuple[str, ...] = (), permission_timeout: float | None = None,
                 workspace_given: bool = True, faux_script: str | None = None, model: str | None = None,
                 trust_workspace: bool = False) -> None:
        self.registry = registry
        self.default_model = default_model
        self.client = client
        self.allowed_tools = allowed_tools
        self.permission_timeout = permission_timeout
        self.faux_script = faux_script
        self.model = model
        self.trust_workspace = trust_workspace
        self.conn = Connection(reader, writer, self._on_eof)
        self.agent = AcpAgent(self.conn, client, workspace, self.open_workspace)
        self.sessions: SessionManager | None = None
        self.mcp: McpManager | None = None
        self.tools_workspace: Workspace | None = None
        self._stopping = False
        self._signals = 0
        self._done = asyncio.Event()
        self._register()
        if workspace_given:
            self._open(workspace, registry, default_model)

    def open_workspace(self, folder: str) -> None:
        """The first session names the workspace: its models, settings, trust and session folder."""
        if not os.path.isdir(folder):
            raise AcpError(E.INVALID_PARAMS, f"invalid params: params.cwd: {folder} is not a directory")
        if self.trust_workspace:
            trust.trust_for_this_run(folder)
        try:
            registry = ModelRegistry.load(folder, faux_script=self.faux_script)
            default_model = registry.resolve(self.model) if self.model else registry.first_usable()
        except (ModelUnavailable, OSError, ValueError) as exc:
            raise AcpError(E.MODEL_UNAVAILABLE, f"the models of {folder} cannot be loaded: {exc}") from None
        self._open(folder, registry, default_model)

    def _open(self, workspace: str, registry: Any, default_model: Any) -> None:
        self.tools_workspace = Workspace(workspace)
        gate = PermissionGate(self.tools_workspace.root, allowed=self.allowed_tools, asker=self.agent.ask_permission)
        self.mcp = McpManager(workspace)
        self.mcp.reload()  # only the user's servers until the workspace is trusted
        self.sessions = SessionManager(registry, workspace, default_model, on_open=self._watch,
                                       tools_workspace=self.tools_workspace, permissions=gate,
                                       file_access=self._files, mcp=self.mcp)
        options = settings.load(workspace)  # what an untrusted workspace may set is already left out
        self.tools_workspace.allow(options.get("workspace", {}).get("extraRoots") or [])
        policy = options.get("permissions", {})
        gate.ask = tuple(policy.get("ask", ASK_DEFAULT))
        gate.without_client = policy.get("withoutClient", "reject")
        self.agent.permission_timeout = self.permission_timeout or _positive(policy.get("timeoutSeconds")) or 300.0
        self.sessions.compaction = load_settings(workspace)
        self.agent.attach(self.sessions, workspace)
        log.info("serving workspace %s; default model %s", workspace, default_model.spec if default_model else "none")

    def _watch(self, session: Any) -> None:
        if self.mcp is not None and not self.mcp.started:
            self.mcp.start()  # the servers start with the first session, in the background
        self.agent.watch(session)

    def _files(self, session_id: str, workspace: Any) -> Any:
        if not (self.client.read_text_file or self.client.write_text_file):
            return None
        return EditorFiles(workspace, self.conn, session_id,
                           read=self.client.read_text_file, write=self.client.write_text_file)

    def _register(self) -> None:
        agent = self.agent

        def needs_init(handler: Any) -> Any:
            async def checked(params: dict[str, Any]) -> Any:
                if not self.client.initialized:
                    raise AcpError(E.INVALID_REQUEST, "call initialize first")
                return await handler(params)
            return checked

        async def do_initialize(params: dict[str, Any]) -> Any:
            try:
                return initialize(params, self.client, self.registry)  # the start-up registry: providers only
            except InitError as exc:
                raise AcpError(exc.code, exc.message) from None

        async def do_authenticate(params: dict[str, Any]) -> Any:
            try:
                return authenticate(self.agent.sessions.registry if self.agent.sessions else self.registry, params)
            except InitError as exc:
                raise AcpError(exc.code, exc.message) from None

        self.conn.requests.update({"initialize": do_initialize, "authenticate": needs_init(do_authenticate)})
        for name, handler in {
            "session/new": agent.new_session, "session/load": agent.load_session,
            "session/list": agent.list_sessions, "session/prompt": agent.prompt,
            "session/set_mode": agent.set_mode, "session/set_config_option": agent.set_config_option,
            **extension_methods(agent),
        }.items():
            self.conn.requests[name] = needs_init(handler)
        self.conn.notifications["session/cancel"] = agent.cancel

    # --- lifecycle ------------------------------------------------------------------

    def _on_eof(self) -> None:
        if self.sessions is not None:
            self.sessions.close_input()
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
        if self.sessions is not None:
            await self.sessions.abort_all()
        await self.conn.drain()
        for _ in range(3):
            await asyncio.sleep(0)
        if self.sessions is not None:
            self.sessions.close_files()
        if self.mcp is not None:
            await self.mcp.close()
        procs.kill_all()
        self._done.set()

    async def run(self, pending: list[Any]) -> None:
        loop = asyncio.get_running_loop()
        writer = self.conn.writer
        writer.attach(loop)

        def broken() -> None:
            asyncio.ensure_future(self.finish())

        writer.on_broken = broken
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_signal)
        if pending:
            loop.call_soon(self.conn.on_items, pending)
        self.conn.reader.attach(loop, self.conn.on_items)
        await self._done.wait()


def serve(reader: Any, writer: Any, *, pending: list[Any], **options: Any) -> int:
    async def main() -> None:
        await AcpServer(reader, writer, **options).run(pending)

    asyncio.run(main())
    return 0
