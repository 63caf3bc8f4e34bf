"""What a native method's handler works with: the host, the client's declarations and the
connection's own state — never the transport (:class:`Context`)."""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Callable

from ..wire.peer import REQUEST_ID
from .ordering import SessionOrder

if TYPE_CHECKING:
    from ..commands.catalog import Catalog
    from .hub import Hub
    from ..host.host import Host
    from ..llm.registry import ModelRegistry
    from ..mcp.manager import McpManager
    from ..session import AgentSession, SessionManager
    from ..guard.permissions import PermissionGate
    from ..guard.workspace import Workspace
    from .initialize import ClientState
    from .server import NativeFace
    from .workspace_trust import WorkspaceTrust

CURRENT: contextvars.ContextVar["Context | None"] = contextvars.ContextVar("pi_daemon_rpc_context", default=None)
"""The connection whose request is being served (and whose run is going on): a session opened
now is that connection's."""


class Context:
    """One per connection; handlers take it with their structured params."""

    def __init__(self, connection: NativeFace, client: ClientState, max_frame_bytes: int, *,
                 after_initialize: Callable[[], None], begin_shutdown: Callable[[], Any],
                 request_exit: Callable[[], None]) -> None:
        self.connection = connection
        self.hub: Hub = connection.hub
        self.client = client
        self.max_frame_bytes = max_frame_bytes
        self.order = SessionOrder()  # which requests about a session wait for a waitForIdle
        self.after_initialize = after_initialize
        self.begin_shutdown = begin_shutdown
        self.request_exit = request_exit

    @property
    def host(self) -> Host:
        return self.hub.host

    @property
    def trust(self) -> WorkspaceTrust:
        return self.hub.trust

    @property
    def request_id(self) -> Any:
        """The id of the request being handled."""
        return REQUEST_ID.get()

    # --- this connection's sessions ------------------------------------------------------

    def session(self, session_id: str | None, *, create: bool = False) -> AgentSession:
        """The named open session, else this connection's current one (created when ``create`` and none)."""
        if session_id:
            return self.sessions.get(session_id)
        current = self.connection.current
        if current is not None and self.sessions.sessions.get(current.id) is current:
            return current
        if create:
            return self.sessions.create_or_detached()  # the hub makes it this connection's current session
        from ..session.manager import SessionNotFound  # loaded with the host

        raise SessionNotFound("there is no current session: call session/new, session/load or prompt first")

    def own(self, session: AgentSession) -> None:
        """This connection sent the session a prompt: it is the session's editor from now on."""
        self.hub.own(self.connection, session)

    # --- the host, as the handlers see it ---------------------------------------------

    @property
    def workspace(self) -> str:
        return self.hub.workspace  # the host's, known before it is open

    @property
    def registry(self) -> ModelRegistry:
        return self.host.registry

    @property
    def tools_workspace(self) -> Workspace:
        return self.host.tools_workspace

    @property
    def gate(self) -> PermissionGate:
        return self.host.gate

    @property
    def sessions(self) -> SessionManager:
        return self.host.sessions

    @property
    def commands(self) -> Catalog:
        return self.host.commands

    @property
    def mcp(self) -> McpManager:
        return self.host.mcp

    def apply_settings(self) -> None:
        self.host.apply_settings()
