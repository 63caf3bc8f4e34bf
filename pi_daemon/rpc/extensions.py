"""Slash commands in typed input, and the extensions' life in the daemon (MCP servers, command files).

``prompt`` / ``steer`` / ``followUp`` pass their text through :func:`typed_input` first:
a template or skill command is expanded (the message keeps what was typed in its
``command`` field), a built-in command is run by the daemon and never reaches the model,
an unknown ``/name`` is an error. MCP servers are started once ``initialize`` has been
answered (or a moment after start-up for clients that never send it); the command
files are watched and every open session hears ``commands_update`` when they change.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Literal, cast

from ..commands.catalog import Catalog, Invocation
from ..events import CommandsUpdate
from ..mcp.config import from_acp
from ..messages import SlashCommandUse
from . import types as t
from .errors import InvalidParams, InvalidState

if TYPE_CHECKING:
    from ..session import AgentSession
    from .server import Daemon

log = logging.getLogger(__name__)

WATCH_INTERVAL_S = 1.0


def command_infos(catalog: Catalog) -> list[t.CommandInfo]:
    return [t.CommandInfo(name=e.name, description=e.description, source=cast(Literal["builtin", "template", "skill"], e.source),
                          argument_hint=e.argument_hint,
                          file=e.file) for e in catalog.entries()]


def server_infos(daemon: "Daemon", session_id: str | None) -> list[t.McpServerInfo]:
    return [t.McpServerInfo(name=s.name, source=s.source, transport=s.transport,
                            state=cast(Literal["stopped", "starting", "ready", "failed"], s.state),
                            tool_count=len(s.tools), tools=s.tools, error=s.error)
            for s in daemon.mcp.states(session_id)]


def mcp_configs(items: list[dict[str, Any]] | None, cwd: str) -> list[Any]:
    try:
        return from_acp(items or [], cwd)
    except ValueError as exc:
        raise InvalidParams(f"invalid params: params.{exc}") from None


# --- typed input ---------------------------------------------------------------------------


def parse_input(daemon: "Daemon", text: str) -> Invocation:
    """What was typed: text, or a command (an unknown ``/name`` raises the catalog's UnknownCommand)."""
    return daemon.commands.parse(text)


def command_record(invocation: Invocation, typed: str) -> SlashCommandUse | None:
    if invocation.kind == "text":
        return None
    return SlashCommandUse(name=invocation.name, source=cast(Literal["template", "skill"], invocation.kind),
                           input=typed)


async def run_builtin(daemon: "Daemon", session: "AgentSession", invocation: Invocation) -> t.CommandOutcome:
    """Run ``/compact``, ``/new``, ``/model``, ``/thinking`` or ``/export``."""
    from .methods.models import set_model, set_thinking_level
    from .methods.sessions import session_export

    name, args = invocation.name, invocation.args
    if name == "compact":
        if session.busy:
            raise InvalidState("/compact needs an idle session: abort the run or wait for it")
        result = await session.compact(args or None)
        if result is None:
            raise InvalidState("/compact did not compact (the compaction_end event says why)")
        return t.CommandOutcome(name=name, result=result)
    if name == "new":
        created = daemon.sessions.create()
        return t.CommandOutcome(name=name, result=t.SessionNewResult(session_id=created.id, file=created.file))
    if name == "model":
        provider, _, model_id = args.partition("/")
        if not args or not model_id:
            raise InvalidParams("/model needs provider/id, e.g. /model anthropic/claude-sonnet-4-5")
        changed = await set_model(daemon, t.SetModelParams(provider=provider, model_id=model_id,
                                                            session_id=session.id))
        return t.CommandOutcome(name=name, result=changed)
    if name == "thinking":
        if args not in ("off", "minimal", "low", "medium", "high", "xhigh"):
            raise InvalidParams("/thinking needs a level: off, minimal, low, medium, high or xhigh")
        level = await set_thinking_level(daemon, t.SetThinkingLevelParams(level=cast(t.ThinkingLevelName, args), session_id=session.id))
        return t.CommandOutcome(name=name, result=level)
    if name == "export":
        fmt = args or "html"
        if fmt not in ("html", "markdown"):
            raise InvalidParams("/export takes html or markdown")
        exported = await session_export(daemon, t.ExportParams(format=cast(Literal["html", "markdown"], fmt), session_id=session.id))
        return t.CommandOutcome(name=name, result=exported)
    raise InvalidParams(f"/{name} is not a built-in command")


# --- life in the daemon --------------------------------------------------------------------


class Background:
    """Starts the MCP servers after ``initialize`` and watches the command files."""

    def __init__(self, daemon: "Daemon") -> None:
        self.daemon = daemon
        self._watcher: asyncio.Task[None] | None = None

    def start_soon(self, delay: float = 0.0) -> None:
        loop = asyncio.get_running_loop()
        if delay:
            loop.call_later(delay, self.start)
        else:  # two turns: the initialize reply goes out first
            loop.call_soon(loop.call_soon, self.start)

    def start(self) -> None:
        if self.daemon._shutting_down:
            return
        if not self.daemon.mcp.started:
            self.daemon.mcp.start()
        if self._watcher is None:
            self._watcher = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            try:
                changed = self.daemon.commands.refresh()
            except OSError as exc:  # a folder vanished mid-scan: next time
                log.debug("scanning the command files: %s", exc)
                continue
            if changed:
                commands = command_infos(self.daemon.commands)
                for session in list(self.daemon.sessions.sessions.values()):
                    await session.observers.emit(CommandsUpdate(commands=commands))

    async def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        await self.daemon.mcp.close()
