"""What a native method's handler works with: the host, the client's declarations and the
face's own state — never the transport (:class:`Context`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..wire.peer import REQUEST_ID
from .ordering import SessionOrder

if TYPE_CHECKING:
    from ..commands.catalog import Catalog
    from ..host.host import Host
    from ..llm.registry import ModelRegistry
    from ..mcp.manager import McpManager
    from ..session import SessionManager
    from ..guard.permissions import PermissionGate
    from ..guard.workspace import Workspace
    from .initialize import ClientState
    from .workspace_trust import WorkspaceTrust


class Context:
    """One per connection; handlers take it with their structured params."""

    def __init__(self, host: Host, client: ClientState, max_frame_bytes: int, *,
                 after_initialize: Callable[[], None], begin_shutdown: Callable[[], Any],
                 request_exit: Callable[[], None]) -> None:
        self.host = host
        self.client = client
        self.max_frame_bytes = max_frame_bytes
        self.event_seqs: dict[str, int] = {}  # session id -> the last seq sent (see notify)
        self.order = SessionOrder()  # which requests about a session wait for a waitForIdle
        self.trust: WorkspaceTrust  # set by the face once built
        self.after_initialize = after_initialize
        self.begin_shutdown = begin_shutdown
        self.request_exit = request_exit

    @property
    def request_id(self) -> Any:
        """The id of the request being handled."""
        return REQUEST_ID.get()

    # --- the host, as the handlers see it ---------------------------------------------

    @property
    def workspace(self) -> str:
        return self.host.workspace

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
