"""The daemon's composition root: what the methods act on, apart from the wire.

:class:`App` holds the workspace and its settings, the tools' workspace, the permission
gate, the model registry, the session registry, the slash commands, the MCP servers and
what the client declared. It knows
nothing of frames or pygls: the dispatcher and transport (:mod:`.server`) hand it the two
things only they can do — asking the client (``asker``, ``ask_editor``) and watching each
opened session for its events (``on_open``).
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from .. import settings
from ..commands.catalog import Catalog
from ..llm.registry import ModelRegistry
from ..mcp.manager import McpManager
from ..session import AgentSession, SessionManager
from ..session.compaction import load_settings
from ..session.manager import default_tools
from ..tools.permissions import ASK_DEFAULT, PermissionGate
from ..tools.workspace import Workspace
from .editor_files import EditorFiles
from .initialize import ClientState

log = logging.getLogger(__name__)

DEFAULT_PERMISSION_TIMEOUT = 300.0


def _positive(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


class App:
    def __init__(
        self,
        *,
        workspace: str,
        registry: ModelRegistry,
        default_model: Any,
        max_frame_bytes: int,
        client: ClientState,
        allowed_tools: tuple[str, ...],
        permission_timeout: float | None,
        asker: Callable[..., Awaitable[str | None]],
        on_open: Callable[[AgentSession], None],
        ask_editor: Callable[[str, dict[str, Any]], Awaitable[Any]],
    ) -> None:
        self.workspace = workspace
        self.registry = registry
        self.max_frame_bytes = max_frame_bytes
        self.client = client
        self.tools_workspace = Workspace(workspace)
        self.tools_workspace.allow(self.client.allowed_roots)
        known = {tool.name for tool in default_tools(self.tools_workspace)} | {"mcp"}  # mcp: every MCP tool
        for name in sorted(set(allowed_tools) - known):
            log.warning("--allow %s: there is no tool %r (the tools are %s)", name, name, ", ".join(sorted(known)))
        self._permission_timeout_flag = permission_timeout
        self.permission_timeout = permission_timeout or DEFAULT_PERMISSION_TIMEOUT
        self.gate = PermissionGate(self.tools_workspace.root, allowed=allowed_tools, asker=asker)
        self.commands = Catalog(workspace)
        self.mcp = McpManager(workspace)
        self.event_seqs: dict[str, int] = {}  # session id -> the last seq sent (see notify)
        self.sessions = SessionManager(registry, workspace, default_model, on_open=on_open,
                                       tools_workspace=self.tools_workspace, permissions=self.gate,
                                       mcp=self.mcp, commands=self.commands,
                                       file_access=lambda session_id, view: EditorFiles(view, ask_editor, session_id,
                                                                                        self.client))
        self.apply_settings()

    def apply_settings(self) -> None:
        """Apply settings.json (as far as the workspace's trust allows); again once it is trusted."""
        options = settings.load(self.workspace)
        self.tools_workspace.allow(options.get("workspace", {}).get("extraRoots") or [])
        policy = options.get("permissions", {})
        self.gate.ask = tuple(policy.get("ask", ASK_DEFAULT))
        self.gate.without_client = policy.get("withoutClient", "reject")
        self.permission_timeout = (self._permission_timeout_flag or _positive(policy.get("timeoutSeconds"))
                                   or DEFAULT_PERMISSION_TIMEOUT)
        self.sessions.compaction = load_settings(self.workspace)
        self.mcp.reload()  # the workspace's mcp.json counts once it is trusted
