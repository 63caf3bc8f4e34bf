"""The MCP servers of a daemon: the configured ones, each session's own, and the sessions' tools.

Configured servers (``mcp.json``) are shared by every session; a session's own servers
(``session/new{mcpServers}``) belong to it and stop when it closes. Each session's tool
list is kept live: its built-in tools followed by the tools of every ready server, so a
server that becomes ready mid-conversation is offered from the next model request on.
The tools of a server that failed after it was ready stay listed: calling one restarts it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Callable, Iterable

import attrs

from ..guard import trust
from ..settings import Ignored
from . import config as C
from .connection import McpConnection
from .names import is_mcp_tool
from .tools import McpTool

log = logging.getLogger(__name__)


@attrs.define
class ServerState:
    name: str
    source: str
    transport: str
    state: str
    tools: list[str]
    error: str | None = None


@attrs.define
class _SessionTools:
    live: list[Any]  # the agent's own tool list, updated in place
    base: list[Any]
    servers: dict[str, McpConnection]


class McpManager:
    def __init__(self, workspace: str | Path, on_change: Callable[[], None] | None = None) -> None:
        self.workspace = Path(workspace)
        self.on_change = on_change
        self.servers: dict[str, McpConnection] = {}
        self.problems: list[C.ConfigProblem] = []
        self.ignored: list[Ignored] = []
        self.started = False
        self._sessions: dict[str, _SessionTools] = {}
        self._tools: dict[tuple[int, str], McpTool] = {}

    # --- configuration -----------------------------------------------------------------

    def reload(self) -> None:
        """Read the ``mcp.json`` files (first, and again after the workspace was trusted)."""
        configs, self.problems, self.ignored = C.load(self.workspace, trust.is_trusted(self.workspace))
        for problem in self.problems:
            log.warning("MCP configuration %s: %s", problem.source, problem.message)
        wanted = {c.name: c for c in configs}
        for name, connection in list(self.servers.items()):
            if wanted.get(name) != connection.config:
                del self.servers[name]
                if self.started:
                    asyncio.ensure_future(connection.stop())
        for name, config in wanted.items():
            if name not in self.servers:
                self.servers[name] = McpConnection(config, self._changed)
                if self.started:
                    self.servers[name].start()
        self._refresh()

    def start(self) -> None:
        """Start every configured server in the background (after ``initialize`` was answered)."""
        self.started = True
        for connection in self._all():
            if connection.state == "stopped":
                connection.start()

    # --- sessions ----------------------------------------------------------------------

    def attach(self, session_id: str, tools: list[Any], configs: Iterable[C.ServerConfig] = ()) -> None:
        """Keep ``tools`` (a session agent's tool list) up to date; start the session's own servers."""
        own = {c.name: McpConnection(c, self._changed) for c in configs}
        previous = self._sessions.get(session_id)
        for connection in (previous.servers.values() if previous else ()):  # attached again: its own servers change
            asyncio.ensure_future(connection.stop())
        self._sessions[session_id] = _SessionTools(tools, [t for t in tools if not is_mcp_tool(t.name)], own)
        if self.started:
            for connection in own.values():
                connection.start()
        self._refresh()

    def detach(self, session_id: str) -> None:
        entry = self._sessions.pop(session_id, None)
        for connection in (entry.servers.values() if entry else ()):
            asyncio.ensure_future(connection.stop())

    def connections(self, session_id: str | None) -> list[McpConnection]:
        """The servers a session sees: its own, then the configured ones it does not shadow."""
        own = self._sessions[session_id].servers if session_id in self._sessions else {}
        return [*own.values(), *(c for name, c in self.servers.items() if name not in own)]

    def _all(self) -> list[McpConnection]:
        return [*self.servers.values(), *(c for s in self._sessions.values() for c in s.servers.values())]

    def _tool(self, connection: McpConnection, remote: Any) -> McpTool:
        key = (id(connection), remote.name)
        tool = self._tools.get(key)
        if tool is None or tool.remote != remote:
            tool = self._tools[key] = McpTool(connection, remote)
        return tool

    def tools_for(self, session_id: str | None) -> list[McpTool]:
        out: dict[str, McpTool] = {}
        for connection in self.connections(session_id):
            for remote in connection.tools:
                tool = self._tool(connection, remote)
                out.setdefault(tool.name, tool)
        return list(out.values())

    def _refresh(self) -> None:
        for session_id, entry in self._sessions.items():
            entry.live[:] = entry.base + self.tools_for(session_id)

    def _changed(self, connection: McpConnection) -> None:
        self._refresh()
        if self.on_change is not None:
            self.on_change()

    # --- reporting and the end -----------------------------------------------------------

    def states(self, session_id: str | None) -> list[ServerState]:
        return [ServerState(name=c.name, source=c.config.source, transport=c.config.transport, state=c.state,
                            tools=[self._tool(c, r).name for r in c.tools], error=c.error)
                for c in self.connections(session_id)]

    async def close(self) -> None:
        await asyncio.gather(*(c.stop() for c in self._all()), return_exceptions=True)
