"""The agent host both faces build: the workspace, its settings, tools, permissions, models,
sessions, slash commands and MCP servers, and the order in which they stop.

A face hands it what only a face can do: ask the user for a permission (``asker``) or the
agent's questions (``questions``, when its client can answer them), reach
the editor's buffers (``file_access``) and watch each opened session for its events
(``on_open``, and ``on_close`` when one closes). The host knows nothing of frames or of either protocol.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable, Literal, cast

from .. import procs, settings
from ..commands.catalog import Catalog
from ..events import CommandInfo, CommandsUpdate
from ..llm.registry import ModelRegistry
from ..llm.stream import load_provider
from ..mcp.manager import McpManager
from ..session import AgentSession, SessionManager
from ..session.compaction import load_settings
from ..session.manager import default_tools
from ..tools.language import DEFAULT_DIAGNOSTICS_WAIT_MS, MAX_DIAGNOSTICS_WAIT_MS
from ..guard import sandbox
from ..guard.permission_rules import ASK_DEFAULT
from ..guard.permissions import Asker, PermissionGate
from ..guard.workspace import Workspace

log = logging.getLogger(__name__)

DEFAULT_PERMISSION_TIMEOUT = 300.0
WATCH_INTERVAL_S = 1.0  # how often the command files are looked at


def _positive(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    return float(value) if ok else None


class Host:
    def __init__(
        self,
        *,
        workspace: str,
        registry: ModelRegistry,
        default_model: Any,
        allowed_tools: tuple[str, ...],
        permission_timeout: float | None,
        asker: Asker,
        on_open: Callable[[AgentSession], None],
        on_close: Callable[[AgentSession], None] | None = None,
        file_access: Callable[[str, Any], Any] | None = None,
        language: Callable[[str], Any] | None = None,
        extra_roots: list[str] | None = None,
        questions: Callable[[str], Any] | None = None,
    ) -> None:
        self.workspace = workspace
        self.registry = registry
        self.tools_workspace = Workspace(workspace)
        self.tools_workspace.allow(extra_roots or [])
        known = {tool.name for tool in default_tools(self.tools_workspace)} | {"mcp"}  # mcp: every MCP tool
        for name in sorted(set(allowed_tools) - known):
            log.warning("--allow %s: there is no tool %r (the tools are %s)", name, name, ", ".join(sorted(known)))
        self._permission_timeout_flag = permission_timeout
        self.permission_timeout = permission_timeout or DEFAULT_PERMISSION_TIMEOUT
        self.gate = PermissionGate(self.tools_workspace.root, allowed=allowed_tools, asker=asker)
        self.commands = Catalog(workspace)
        self.mcp = McpManager(workspace)
        self.sessions = SessionManager(registry, workspace, default_model, on_open=on_open, on_close=on_close,
                                       tools_workspace=self.tools_workspace, permissions=self.gate,
                                       mcp=self.mcp, commands=self.commands, file_access=file_access,
                                       language=language, questions=questions)
        self.stopping = False
        self._watcher: asyncio.Task[None] | None = None
        self.apply_settings()

    async def prepare(self) -> None:
        """Load the default model's provider and make its HTTP client now, while the daemon
        waits for the first prompt, rather than in that prompt's time; a local OpenAI-compatible
        server is asked about itself now too (:mod:`..llm.local_server`). The import runs in a
        thread, so what the daemon is answering meanwhile (``initialize``) goes out first.
        Without a call, the first prompt does it."""
        model = self.sessions.default_model
        if model is None or self.stopping:
            return
        await asyncio.to_thread(load_provider, model.api)
        if model.base_url.startswith(("http://", "https://")) and not self.stopping:
            from ..llm.http import client_for  # loaded with the provider just now
            from ..llm.local_server import check_tool_support

            client = client_for(model)
            if model.api == "openai-completions":  # the one provider that asks a local server
                check_tool_support(model, client)

    def apply_settings(self) -> None:
        """Apply settings.json (as far as the workspace's trust allows); again once it is trusted."""
        options = settings.load(self.workspace)
        sandbox.keep_writable_out(options)  # before any program is looked up
        self.tools_workspace.allow(options.get("workspace", {}).get("extraRoots") or [])
        policy = options.get("permissions", {})
        self.gate.ask = tuple(policy.get("ask", ASK_DEFAULT))
        self.gate.without_client = policy.get("withoutClient", "reject")
        self.permission_timeout = (self._permission_timeout_flag or _positive(policy.get("timeoutSeconds"))
                                   or DEFAULT_PERMISSION_TIMEOUT)
        self.sessions.compaction = load_settings(self.workspace)
        wait = options.get("diagnostics", {}).get("waitMs")
        self.sessions.diagnostics_wait_ms = (min(int(wait), MAX_DIAGNOSTICS_WAIT_MS) if isinstance(wait, int)
                                             and not isinstance(wait, bool) and wait >= 0
                                             else DEFAULT_DIAGNOSTICS_WAIT_MS)
        enabled = options.get("subagents", {}).get("enabled", True)
        self.sessions.subagents = enabled if isinstance(enabled, bool) else True  # for sessions opened from now on
        self.mcp.reload()  # the workspace's mcp.json counts once it is trusted

    # --- slash commands ----------------------------------------------------------------

    def command_infos(self) -> list[CommandInfo]:
        return [CommandInfo(name=e.name, description=e.description,
                            source=cast(Literal["builtin", "template", "skill"], e.source),
                            argument_hint=e.argument_hint, file=e.file) for e in self.commands.entries()]

    # --- what runs beside the sessions ---------------------------------------------------

    def start_background(self) -> None:
        """Start the MCP servers and watch the command files (every open session hears
        ``commands_update`` when they change). Once is enough; nothing starts while stopping."""
        if self.stopping:
            return
        if not self.mcp.started:
            self.mcp.start()
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch_commands())

    async def _watch_commands(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            try:
                changed = self.commands.refresh()
            except OSError as exc:  # a folder vanished mid-scan: next time
                log.debug("scanning the command files: %s", exc)
                continue
            if changed:
                commands = self.command_infos()
                for session in list(self.sessions.sessions.values()):
                    await session.observers.emit(CommandsUpdate(commands=commands))

    # --- stopping ----------------------------------------------------------------------

    async def abort_runs(self) -> None:
        """Abort every run; what each had queued is kept in its session."""
        self.stopping = True
        await self.sessions.abort_all()

    async def close(self) -> None:
        """The last step: session files synced and unlocked, MCP servers stopped, and no
        process a command started outlives the daemon."""
        self.stopping = True
        self.sessions.close_files()
        if self._watcher is not None:
            self._watcher.cancel()
        await self.mcp.close()
        procs.kill_all()
