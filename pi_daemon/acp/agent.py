"""The ACP methods, over the shared session layer.

One :class:`AcpAgent` per connection. Each open session has a :class:`Tracked` record:
its live-update translator, the ``session/prompt`` requests waiting for the run to
settle, and its cost. Its mode is the session's own (``ask``, ``plan``, ``auto-edit``). Semantics the protocol leaves open (see docs/protocol.md "ACP mode"):

* ``session/prompt`` while a run is active queues the text as a follow-up (delivered
  when the agent would otherwise stop, in the same run). Every prompt waiting on a run
  is answered when it settles, with its stop reason. Nothing typed is dropped: a
  follow-up still queued when the run is cancelled stays queued (and in the session
  file) and goes with the next prompt.
* ``session/cancel`` aborts the run; waiting prompts answer ``cancelled``, a pending
  permission request is abandoned (its late answer is ignored). ``$/cancel_request`` of a
  ``session/prompt`` does the same, and that prompt is answered ``-32800``.
* ``session/close`` cancels as ``session/cancel`` does, then closes the session (its file
  stays); ``session/delete`` closes it if open and deletes its file (an unknown id is
  already gone: success).
* ``additionalDirectories`` on ``session/new|load|resume`` are the session's own extra roots:
  its tools (and bash's sandbox) may reach them, for that session only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import attrs

from ..events import AgentSettled, CommandsUpdate, CompactionEnd, MessageEnd, ModeChanged, SessionInfoChanged, SubagentEnd
from ..host.commands import command_record, parse_input, run_builtin, set_model
from ..llm.catalog import PROVIDERS
from ..mcp.config import from_acp
from ..messages import AssistantMessage, CompactionSummaryMessage, user_text
from ..session import AgentSession, SessionError, SessionManager, SessionNotFound
from ..session.listing import list_sessions
from ..session.rebuild import entry_usage, readable_message, total_cost, usage_cost
from ..guard.modes import MODES
from ..guard.permission_rules import Rule, describe
from ..guard.permissions import OUTCOMES, TIMED_OUT, Answer, Declined, Propose
from ..wire.errors import AuthRequired, InternalError, SessionNotFoundError, invalid_params
from ..wire.peer import ClientError, Peer
from . import config
from .initialize import AcpClient
from .prompt import render
from .steering import steered
from .subagents import asking_session
from .updates import (Coalescer, LiveUpdates, kind_of, locations_of, plan_update, proposed_content, replay,
                      session_title)

if TYPE_CHECKING:
    from ..host.host import Host

log = logging.getLogger(__name__)



@attrs.define(eq=False)
class Tracked:
    session: AgentSession
    live: LiveUpdates
    waiting: list[asyncio.Future[Any]] = attrs.field(factory=list)
    cancelled: bool = False
    cost: float = 0.0  # what the session's answers have cost so far


def first_prompt(session: AgentSession) -> dict[str, Any] | None:
    """The entry of the session's first user message in its file, as ``session/list`` takes its
    title from: not the context's first, which after a compaction is a later prompt."""
    return next((e for e in session.store.entries if e.get("type") == "message"
                 and isinstance(e.get("message"), dict) and e["message"].get("role") == "user"), None)


def _refusal(message: Any) -> bool:
    text = getattr(message, "error_message", None) or ""
    return "declined to answer" in text or "content_filter" in text


class AcpAgent:
    def __init__(self, peer: Peer, client: AcpClient, workspace: str,
                 open_workspace: Callable[[str], None]) -> None:
        self.peer = peer
        self.client = client
        self.open_workspace = open_workspace  # called with the first session's cwd until a workspace is open
        self.host: Host | None = None
        self.workspace = workspace  # until one is open: the folder pi-daemon was started in
        self.tracked: dict[str, Tracked] = {}
        self._continuing: set[asyncio.Task[None]] = set()  # queued prompts being started

    def attach(self, host: Host) -> None:
        """The workspace is open: sessions live in ``<workspace>/.pi/sessions/``."""
        self.host = host
        self.workspace = host.workspace

    @property
    def open_host(self) -> Host:
        """The open workspace's host (opened by the first session's cwd before any use)."""
        assert self.host is not None, "no workspace is open yet"
        return self.host

    @property
    def manager(self) -> SessionManager:
        return self.open_host.sessions

    @property
    def registry(self) -> Any:
        return self.manager.registry

    # --- sessions opening ----------------------------------------------------------------

    def watch(self, session: AgentSession) -> None:
        """Called by the session manager for every session it opens."""
        parent = self.tracked.get(session.parent_session_id or "")
        if parent is not None:  # a subagent: shown as its parent's task call, never as a session
            return
        tracked = Tracked(session, LiveUpdates(self.workspace),  # tool paths are relative to the workspace
                          cost=total_cost(session.store.entries))
        self.tracked[session.id] = tracked
        gate_check = session.agent.before_tool_call
        send = Coalescer(self.peer.writer, functools.partial(self.update, session.id))

        async def check(ctx: Any, cancel: Any) -> str | Declined | None:
            refusal = await gate_check(ctx, cancel) if gate_check is not None else None
            if refusal is None:  # allowed (asked or not): only now is it running
                send(tracked.live.running(ctx.tool_call.id))
            return refusal

        session.agent.before_tool_call = check

        async def observe(event: Any) -> None:
            if isinstance(event, CommandsUpdate):  # a template or skill file changed
                send(self._commands_update())
            elif isinstance(event, SessionInfoChanged):  # emitted before the session takes the name
                send({"sessionUpdate": "session_info_update", "title": self._title(session, event.name)})
            elif isinstance(event, MessageEnd) and getattr(event.message, "role", None) == "user" \
                    and not session.name and event.entry_id is not None \
                    and (first_prompt(session) or {}).get("id") == event.entry_id:
                send({"sessionUpdate": "session_info_update", "title": self._title(session, None)})
            elif isinstance(event, ModeChanged):
                send({"sessionUpdate": "current_mode_update", "currentModeId": event.mode})
                send({"sessionUpdate": "config_option_update", "configOptions": self.config_options(session)})
            elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
                tracked.cost += event.message.usage.cost.total
            elif isinstance(event, SubagentEnd):  # what its subagent cost
                tracked.cost += event.cost or 0.0
            elif isinstance(event, CompactionEnd) and event.result is not None:  # its own model call
                tracked.cost += usage_cost(entry_usage(session.store.by_id.get(event.result.entry_id) or {}))
            for update in tracked.live(event):
                send(update)
            if isinstance(event, (AgentSettled, CompactionEnd)):  # a turn's end; a compaction shrank the context
                used = config.usage(session, tracked.cost)
                if used is not None:
                    send(used)
            if isinstance(event, AgentSettled):
                send.flush()
                self._settled(tracked, event)
            await self.peer.writer.drain()

        session.subscribe(observe)

    @staticmethod
    def _title(session: AgentSession, name: str | None) -> str | None:
        entry = first_prompt(session)
        first, _ = readable_message(entry) if entry is not None else (None, None)
        return session_title(name, user_text(first) if first is not None else None)

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.peer.notify("session/update", {"sessionId": session_id, "update": update})

    def get(self, params: dict[str, Any]) -> Tracked:
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise invalid_params("params.sessionId", "expected a string")
        tracked = self.tracked.get(session_id)
        if tracked is None:
            raise SessionNotFoundError(f"no open session with id {session_id!r}: "
                                               "create one with session/new or open it with session/load")
        return tracked

    def _cwd(self, params: dict[str, Any]) -> str:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise invalid_params("params.cwd", "expected an absolute path")
        cwd = os.path.normpath(cwd)
        if self.host is None:
            self.open_workspace(cwd)
        root = os.path.realpath(self.workspace)
        if os.path.commonpath([os.path.realpath(cwd), root]) != root:
            raise invalid_params("params.cwd", f"{cwd} is outside the workspace this agent serves "
                                 f"({self.workspace}); one pi-daemon --acp serves one workspace: "
                                 "start another for that folder")
        return cwd

    @staticmethod
    def _mcp_servers(params: dict[str, Any]) -> list[dict[str, Any]]:
        servers = params.get("mcpServers")
        if servers is None:
            return []
        if not isinstance(servers, list) or not all(isinstance(s, dict) for s in servers):
            raise invalid_params("params.mcpServers", "expected an array of MCP server objects")
        return servers

    @staticmethod
    def _directories(params: dict[str, Any]) -> list[str]:
        """``additionalDirectories``: existing folders, named by absolute paths."""
        folders = params.get("additionalDirectories")
        if folders is None:
            return []
        if not isinstance(folders, list) or not all(isinstance(f, str) for f in folders):
            raise invalid_params("params.additionalDirectories", "expected an array of absolute paths")
        for folder in folders:
            if not os.path.isabs(folder):
                raise invalid_params("params.additionalDirectories", f"{folder!r} is not an absolute path")
            if not os.path.isdir(folder):
                raise invalid_params("params.additionalDirectories", f"{folder} is not a folder")
        return folders

    def _state(self, tracked: Tracked) -> dict[str, Any]:
        return {"modes": {"currentModeId": tracked.session.mode, "availableModes": config.MODES},
                "configOptions": self.config_options(tracked.session)}

    def _announce_commands(self, session_id: str) -> None:
        asyncio.get_running_loop().call_soon(self.update, session_id, self._commands_update())

    def _commands_update(self) -> dict[str, Any]:
        """Every slash command the session takes: the built-ins, the templates and the skills."""
        commands = [{"name": c.name, "description": c.description,
                     **({"input": {"hint": c.argument_hint}} if c.argument_hint else {})}
                    for c in self.open_host.command_infos()]
        return {"sessionUpdate": "available_commands_update", "availableCommands": commands}

    async def new_session(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd, servers, folders = self._cwd(params), self._mcp_servers(params), self._directories(params)
        meta = params.get("_meta") or {}
        pi = (meta.get("pi") or {}) if isinstance(meta, dict) else {}
        for key in ("name", "model"):
            if not isinstance(pi, dict) or not isinstance(pi.get(key), (str, type(None))):
                raise invalid_params(f"params._meta.pi.{key}", "expected a string")
        try:
            own = from_acp(servers, cwd)
        except ValueError as exc:
            raise invalid_params("params.mcpServers", str(exc)) from None
        session = self.manager.create(cwd=cwd, name=pi.get("name"), model=pi.get("model"), mcp_servers=own)
        session.mcp_servers = servers
        session.view.set_session_roots(folders)
        self._announce_commands(session.id)  # after the answer: before it the client knows no such session
        return {"sessionId": session.id, **self._state(self.tracked[session.id])}

    def _reopen(self, params: dict[str, Any]) -> AgentSession:
        """The stored session ``session/load`` and ``session/resume`` name, open with the
        MCP servers and extra roots the request gives."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise invalid_params("params.sessionId", "expected a string")
        cwd, servers, folders = self._cwd(params), self._mcp_servers(params), self._directories(params)
        try:
            own = from_acp(servers, cwd)
        except ValueError as exc:
            raise invalid_params("params.mcpServers", str(exc)) from None
        session, _ = self.manager.load(session_id)
        session.mcp_servers = servers
        session.view.set_session_roots(folders)
        if self.manager.mcp is not None:  # the servers the editor names for this session now
            self.manager.mcp.attach(session.id, session.agent.state.tools, own)
        return session

    def _reopened(self, session: AgentSession) -> dict[str, Any]:
        """What follows a load or resume, all before its answer (nothing for it may come after):
        the plan (when there is one), the commands and the usage."""
        tracked = self.tracked[session.id]
        if session.plan.current.entries:
            self.update(session.id, plan_update(session.plan.event()))
        self.update(session.id, self._commands_update())
        used = config.usage(session, tracked.cost)
        if used is not None:
            self.update(session.id, used)
        return self._state(tracked)

    async def resume_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """``session/load`` without the replay: the client still shows the conversation."""
        return self._reopened(self._reopen(params))

    async def load_session(self, params: dict[str, Any]) -> dict[str, Any]:
        session = self._reopen(params)
        messages = []
        for entry in session.store.branch():
            if entry.get("type") == "message":
                message, reason = readable_message(entry)
                if reason is None:
                    messages.append(message)
            elif entry.get("type") == "compaction" and isinstance(entry.get("summary"), str):
                messages.append(CompactionSummaryMessage(summary=entry["summary"]))
        for update in replay(messages, self.tracked[session.id].live.workspace):
            self.update(session.id, update)
            await self.peer.writer.drain()
        return self._reopened(session)

    async def close_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel the session's run (its prompts answer ``cancelled``) and close it; its file stays."""
        tracked = self.get(params)
        await self._close(tracked)
        return {}

    async def _close(self, tracked: Tracked) -> None:
        tracked.cancelled = True
        await tracked.session.abort()
        await self.manager.close(tracked.session)
        self.tracked.pop(tracked.session.id, None)
        for waiter in tracked.waiting:  # a run that never settled still answers its prompts
            if not waiter.done():
                waiter.set_result({"stopReason": "cancelled"})
        tracked.waiting.clear()

    async def delete_session(self, params: dict[str, Any]) -> dict[str, Any]:
        """Close the session if it is open and delete its file; an unknown id is already gone."""
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise invalid_params("params.sessionId", "expected a string")
        if self.host is None:  # the sessions listed so far are the starting folder's
            self.open_workspace(self.workspace)
        tracked = self.tracked.get(session_id)
        if tracked is not None:
            await self._close(tracked)
        try:
            await self.manager.delete(session_id, None)
        except SessionNotFound:
            log.info("session/delete: no session %s here; nothing to delete", session_id)
        return {}

    async def list_sessions(self, params: dict[str, Any]) -> dict[str, Any]:
        cwd = self._cwd(params) if params.get("cwd") is not None else None
        # no workspace open yet and no cwd naming one: the folder pi-daemon was started in
        folder = self.manager.sessions_dir if self.host else Path(self.workspace) / ".pi" / "sessions"
        found = await asyncio.to_thread(list_sessions, folder, cwd)  # large files never hold the loop
        return {"sessions": [{"sessionId": d["sessionId"], "cwd": d["cwd"],
                              "title": session_title(d["name"], d["firstMessage"]), "updatedAt": d["updatedAt"],
                              "_meta": {"pi": {"file": d["file"], "messageCount": d["messageCount"]}}}
                             for d in found  # ACP's SessionInfo has no place for why a file is damaged
                             if not d.get("damaged") and not d.get("parentSessionId")]}  # nor for subagents

    # --- turns ----------------------------------------------------------------------

    async def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        tracked = self.get(params)
        session = tracked.session
        text, images = render(params.get("prompt"), self.workspace)
        typed = parse_input(self.open_host, text)
        if typed.kind == "builtin":  # run here, never sent to the model
            done = await run_builtin(self.open_host, session, typed)
            self.update(session.id, {"sessionUpdate": "agent_message_chunk",
                                     "content": {"type": "text", "text": done.summary}})
            return {"stopReason": "end_turn"}
        self._check_key(session)
        waiter = asyncio.get_running_loop().create_future()
        tracked.waiting.append(waiter)
        if not session.busy:
            tracked.cancelled = False
        try:
            await session.prompt(typed.text, images, streaming_behavior="followUp" if session.busy else None,
                                 command=command_record(typed, text))
        except BaseException:
            tracked.waiting.remove(waiter)
            raise
        try:
            answer: dict[str, Any] = await asyncio.shield(waiter)
        except asyncio.CancelledError:  # $/cancel_request of this prompt: the run stops as on session/cancel
            if not waiter.done():
                tracked.cancelled = True
                await session.stop()
            raise
        return answer

    def _check_key(self, session: AgentSession) -> None:
        """A built-in provider's missing key is ACP's "authentication required": the client
        can then offer the provider's auth method, whose answer names the variable to set."""
        model = session.model
        if model is None or model.provider not in PROVIDERS or self.registry.availability(model)[0]:
            return
        env = PROVIDERS[model.provider][2]
        if not os.environ.get(env):
            raise AuthRequired(f"{model.spec} needs {env}, which is not set in the environment "
                                          "pi-daemon was started with: set it in the agent's environment")

    def _settled(self, tracked: Tracked, event: AgentSettled) -> None:
        session = tracked.session
        aborted = event.aborted or tracked.cancelled
        if not aborted and tracked.waiting and len(session.agent.follow_ups):
            # A prompt queued after the run's last chance to take it: run it once this run is
            # done settling (the session is busy until this notification has been handled).
            task = asyncio.get_running_loop().create_task(self._continue(tracked, event))
            self._continuing.add(task)
            task.add_done_callback(self._continuing.discard)
            return
        self._answer(tracked, event)

    async def _continue(self, tracked: Tracked, event: AgentSettled) -> None:
        await tracked.session.wait_settled()  # the run that queued it has finished settling
        try:
            await tracked.session.continue_()
        except SessionError as exc:
            log.warning("session %s: the queued prompt could not be run: %s", tracked.session.id, exc)
            self._answer(tracked, event)

    def _answer(self, tracked: Tracked, event: AgentSettled) -> None:
        """Answer every prompt waiting on the run that just settled."""
        session = tracked.session
        aborted = event.aborted or tracked.cancelled
        waiting, tracked.waiting = tracked.waiting, []
        last = next((m for m in reversed(session.messages) if getattr(m, "role", None) == "assistant"), None)
        outcome: Any
        if aborted:
            outcome = {"stopReason": "cancelled"}
        elif event.stop_reason == "rejected":  # ACP v1 has no such reason: the turn ended, _meta says why
            outcome = {"stopReason": "end_turn", "_meta": {"pi": {"stopReason": "rejected"}}}
        elif getattr(last, "stop_reason", None) == "length":
            outcome = {"stopReason": "max_tokens"}
        elif getattr(last, "stop_reason", None) == "error":
            outcome = ({"stopReason": "refusal"} if _refusal(last) else
                       InternalError(f"the model request failed: {getattr(last, 'error_message', None)}"))
        elif session.agent.state.error and last is None:
            outcome = InternalError(session.agent.state.error)
        else:
            outcome = {"stopReason": "end_turn"}
        for waiter in waiting:
            if waiter.done():
                continue
            if isinstance(outcome, Exception):
                waiter.set_exception(outcome)
            else:
                waiter.set_result(dict(outcome))

    async def cancel(self, params: dict[str, Any]) -> None:
        tracked = self.get(params)
        tracked.cancelled = True
        await tracked.session.stop()  # queued prompts answer cancelled: none fires with the next one

    # --- permission ---------------------------------------------------------------------

    async def ask_permission(self, session_id: str, call_id: str, tool: str, args: dict[str, Any], title: str,
                             options: list[str], rule: Rule, propose: Propose) -> Answer | None:
        """``session/request_permission``; the chosen option id is the native outcome, with the reason or
        edited arguments a client puts in its ``_meta.pi`` (:mod:`.steering`). ACP's answer carries no
        file text of the user's: the call is shown as its diffs, no proposal is computed."""
        if self.peer.closed:
            return None
        shown, subagent = asking_session(self.manager.sessions.get(session_id), self.tracked)
        session_id = shown or session_id
        tracked = self.tracked.get(session_id)
        workspace = tracked.live.workspace if tracked else self.workspace
        what = describe(rule)
        offered = [
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": f"Always allow {what}", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
            {"optionId": "reject_always", "name": f"Always reject {what}", "kind": "reject_always"},
            {"optionId": "reject_and_stop", "name": "Reject and stop", "kind": "reject_once"},
        ]
        params = {"sessionId": session_id, "options": offered,
                  "toolCall": {"toolCallId": call_id, "title": title, "kind": kind_of(tool), "status": "pending",
                               "rawInput": args, "locations": locations_of(tool, args, workspace),
                               "content": proposed_content(tool, args, workspace)},
                  "_meta": {"pi": {"remember": {"scope": rule.scope, "pattern": rule.pattern, "label": what},
                                   **subagent}}}
        timeout = self.open_host.permission_timeout
        try:
            result = await self.peer.request("session/request_permission", params, timeout=timeout)
        except TimeoutError:
            log.warning("session/request_permission for %s was not answered within %g s: refused", call_id,
                        timeout)
            return Answer(TIMED_OUT)
        except ClientError as exc:
            log.warning("session/request_permission for %s failed: %s", call_id, exc)
            return Answer("cancelled")
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if isinstance(outcome, dict) and outcome.get("outcome") == "selected" and outcome.get("optionId") in OUTCOMES:
            return steered(str(outcome["optionId"]), outcome.get("_meta"))
        return Answer("cancelled")

    # --- modes and configuration ----------------------------------------------------------

    def config_options(self, session: AgentSession) -> list[dict[str, Any]]:
        return config.options(self.registry, session, self.client.boolean_options)

    async def set_mode(self, params: dict[str, Any]) -> dict[str, Any]:
        tracked = self.get(params)
        mode = params.get("modeId")
        if mode not in MODES:
            raise invalid_params("params.modeId", f"unknown mode {mode!r} (modes: {', '.join(MODES)})")
        await tracked.session.set_mode(mode)  # current_mode_update follows its mode_changed
        return {}

    async def set_config_option(self, params: dict[str, Any]) -> dict[str, Any]:
        tracked = self.get(params)
        option, value = config.requested_value(params, self.client.boolean_options)
        if option == "model":
            provider, _, model_id = value.partition("/")
            await set_model(self.open_host, tracked.session, provider, model_id)
        elif option == "mode":
            if value not in MODES:
                raise invalid_params("params.value", f"unknown mode {value!r} (modes: {', '.join(MODES)})")
            await tracked.session.set_mode(value)
        elif option == "thought_level":
            await tracked.session.set_thinking_level(value)
        else:  # auto_compact
            tracked.session.set_auto_compaction(value, None, None)
        return {"configOptions": self.config_options(tracked.session)}
