"""The sessions of one workspace: the files in ``.pi/sessions/`` and the ones open now.

Session files are opened from the session folder only; a file elsewhere is opened only
when the caller says so (``allow_outside``), and then read-only, so a load never
modifies a file outside the folder.
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import attrs

from ..commands.catalog import Catalog
from ..commands.skills import SkillTool
from ..llm.model import Model
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..mcp.config import ServerConfig
from ..mcp.manager import McpManager
from ..messages import user_text
from ..settings import remember_model
from ..tools.background import ProcessTable
from ..tools.bash import BashTool
from ..tools.builtin import coding_tools
from ..tools.file_access import DiskFiles, FileAccess
from ..tools.plan import UpdatePlanTool
from ..tools.question import ASK_USER, Ask, AskUserTool
from ..tools.language import DEFAULT_DIAGNOSTICS_WAIT_MS, LanguageAccess, checked_edits, language_tools
from ..guard.permissions import Declined, PermissionGate
from ..tools.process_tools import PROCESS_TOOL_CLASSES
from ..tools.shell import clean_spill
from ..guard.workspace import PathRefused, Workspace
from . import kept_settings, load_index
from .agent_session import AgentSession, EntryError, SessionError
from .changes import ChangeLog
from .compaction import CompactionSettings
from .plan_state import branch_plan
from .rebuild import context_messages, interrupted, pending_queue, readable_message, session_name, settings
from .store import (
    INDEXED_SIDE_ENTRIES,
    SessionFileError,
    SessionLocked,
    SessionReadOnly,
    SessionStore,
    collector_paused,
    file_stamp,
    storage_error,
)
from .subagents import TaskTool, inherit
from .system_prompt import build as build_system_prompt

log = logging.getLogger(__name__)

MAX_OPEN_SESSIONS = 256  # each holds its conversation in memory; a stored one is reopened with session/load


def default_tools(workspace: Workspace, files: FileAccess | None = None) -> list[Any]:
    """The tools every new or loaded session gets; ``files``: how they reach files (default: disk)."""
    return coding_tools(workspace, files)


class SessionNotFound(Exception):
    pass


class OutsidePath(Exception):
    """A path outside the place a request may use; ``field`` names the param."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class SessionManager:
    def __init__(self, registry: ModelRegistry, workspace: str, default_model: Model | None,
                 on_open: Callable[[AgentSession], None] | None = None,
                 on_close: Callable[[AgentSession], None] | None = None,
                 compaction: CompactionSettings | None = None, tools_workspace: Workspace | None = None,
                 permissions: PermissionGate | None = None, mcp: McpManager | None = None,
                 commands: Catalog | None = None,
                 file_access: Callable[[str, Workspace], FileAccess | None] | None = None,
                 language: Callable[[str], LanguageAccess | None] | None = None,
                 questions: Callable[[str], Ask | None] | None = None) -> None:
        self.registry = registry
        self.workspace = workspace
        self.tools_workspace = tools_workspace or Workspace(workspace)
        self.permissions = permissions
        self.file_access = file_access  # (session id, its tools' view) -> how its tools reach files
        self.language = language  # session id -> the editor's language servers, when the client has them
        self.questions = questions  # session id -> how to ask its user (ask_user), when the client can answer
        self.diagnostics_wait_ms = DEFAULT_DIAGNOSTICS_WAIT_MS  # settings' diagnostics.waitMs
        self.mcp = mcp  # MCP servers: their tools join every session's tools
        self.commands = commands  # skills: named in the system prompt, loaded with the skill tool
        self.default_model = default_model
        self.on_open = on_open
        self.on_close = on_close
        self.compaction = compaction or CompactionSettings()
        self.subagents = True  # settings' subagents.enabled: sessions opened from now on get the task tool
        self.sessions: dict[str, AgentSession] = {}
        self.input_closed = False
        self.processes = ProcessTable(self._announce)  # the agent's background commands, every session's
        clean_spill(self.spill_dir)

    async def _announce(self, session_id: str, event: Any) -> None:
        """A background process started or ended: tell the session's observers (not a fact of its file)."""
        session = self.sessions.get(session_id)
        if session is not None:
            await session.observers.emit(event)

    @property
    def sessions_dir(self) -> Path:
        return Path(self.workspace) / ".pi" / "sessions"

    @property
    def spill_dir(self) -> Path:
        """Where commands' full outputs go (see :func:`..tools.shell.clean_spill`)."""
        return Path(self.workspace) / ".pi" / "tmp"

    def working_folder(self, cwd: str | None) -> Workspace:
        """The tools' view for a session working in ``cwd`` (default: the workspace), its own object.

        Raises OutsidePath when ``cwd`` is not a folder inside the confinement roots."""
        if not cwd:
            cwd = str(self.tools_workspace.root)
        try:
            return self.tools_workspace.at(cwd)
        except PathRefused as exc:
            raise OutsidePath("cwd", str(exc)) from None

    def _tools(self, store: SessionStore) -> tuple[Workspace, FileAccess, list[Any], list[Any]]:
        """A top-level session's view of the workspace, its file access, its tools and skills."""
        cwd = store.header.get("cwd") or self.workspace
        try:
            view = self.working_folder(cwd)
        except OutsidePath as exc:
            log.warning("session %s: its folder cannot be used (%s); it works in the workspace", store.header["id"], exc)
            view = self.tools_workspace.at(str(self.tools_workspace.root))
        files = (self.file_access(store.header["id"], view) if self.file_access is not None else None) \
            or DiskFiles(view)
        tools = default_tools(view, files)
        for tool in tools:
            if isinstance(tool, BashTool):  # its background commands belong to this session
                tool.processes, tool.session_id = self.processes, store.header["id"]
        tools += [cls(self.processes, store.header["id"]) for cls in PROCESS_TOOL_CLASSES]
        language = self.language(store.header["id"]) if self.language is not None else None
        if language is not None:
            tools = checked_edits(tools, view, language, lambda: self.diagnostics_wait_ms)
            tools += language_tools(view, files, language)
        skills = list(self.commands.skills) if self.commands is not None else []
        if skills:
            tools.append(SkillTool(lambda: self.commands.skills if self.commands is not None else []))
        if self.subagents:
            tools.append(TaskTool(self, store.header["id"]))
        tools.append(UpdatePlanTool())
        ask = self.questions(store.header["id"]) if self.questions is not None else None
        if ask is not None:
            tools.append(AskUserTool(ask))
        return view, files, tools, skills

    def _open(self, store: SessionStore, *, model: Model | None, thinking_level: str = "off",
              messages: Sequence[Any] = (), name: str | None = None,
              mcp_servers: Sequence[ServerConfig] = (), parent: AgentSession | None = None,
              child_tools: Sequence[Any] = ()) -> AgentSession:
        """Open a session on ``store``; with ``parent``, a subagent's: it works with ``child_tools``
        (some of the parent's own tool objects, so the same files, editor and change log), and
        is never a face's current session."""
        if parent is None:
            view, files, tools, skills = self._tools(store)
        else:
            view, files, tools = parent.view, parent.files, list(child_tools)
            ask = self.questions(store.header["id"]) if self.questions is not None else None
            tools = [AskUserTool(ask) if t.name == ASK_USER and ask is not None else t  # its questions are its own
                     for t in tools]
            skills = list(self.commands.skills) if self.commands is not None and \
                any(t.name == "skill" for t in tools) else []
        session = AgentSession(self.registry, store, cwd=str(view.cwd), model=model,
                               thinking_level=thinking_level, messages=messages, name=name,
                               compaction=attrs.evolve(self.compaction), tools=tools,
                               system_prompt=build_system_prompt(self.tools_workspace.root, tools,
                                                                 roots=self.tools_workspace.roots, skills=skills,
                                                                 cwd=view.cwd))
        session.files = files
        session.view = view  # its own roots (ACP's additionalDirectories) are set on it
        session.changes = ChangeLog(self.tools_workspace, store, Path(self.workspace) / ".pi")
        if parent is None:  # a subagent's tools record their changes in its parent's run
            files.changes = session.changes
            store.before_close = self._index_on_close
        session.spill_dir = self.spill_dir  # a session in a sub-folder still spills into the workspace's .pi/tmp
        kept_settings.restore(session)
        if self.mcp is not None and parent is None:
            self.mcp.attach(session.id, session.agent.state.tools, mcp_servers)
        if self.permissions is not None:
            gate = self.permissions

            moded = parent if parent is not None else session  # a subagent follows its parent's mode

            async def check(ctx: Any, cancel: Any) -> str | Declined | None:
                return await gate.check(session.id, ctx, cancel, moded.mode)  # the mode at this call

            session.agent.before_tool_call = check
            if parent is not None:
                self.permissions.parents[session.id] = parent.id
        if self.input_closed:
            session.close_input()
        self.sessions[session.id] = session
        if self.on_open is not None:
            self.on_open(session)
        log.info("session %s opened (%s)%s", session.id, store.path,
                 f", a subagent of {parent.id}" if parent is not None else "")
        return session

    def open_child(self, parent: AgentSession, tool_call_id: str, tools: Sequence[Any],
                   model: Model | None) -> AgentSession:
        """A subagent's session: a new file linked to ``parent`` and its ``task`` call, configured
        from the parent (:func:`.subagents.inherit`), with ``tools`` (taken from the parent's)."""
        store = self._new_store(parent.cwd, header_fields={"parentSessionId": parent.id,
                                                           "parentToolCallId": tool_call_id})
        if model is not None:
            store.append("model_change", provider=model.provider, modelId=model.id)
        level = parent.agent.state.thinking_level if model is None or model.reasoning else "off"
        store.append("thinking_level_change", thinkingLevel=level)
        store.sync()
        child = self._open(store, model=model, thinking_level=level, parent=parent, child_tools=tools)
        inherit(parent, child)
        return child

    def _room_for_one_more(self) -> None:
        if len(self.sessions) >= MAX_OPEN_SESSIONS:
            raise SessionError("state", f"{MAX_OPEN_SESSIONS} sessions are open, the limit: close some "
                                        "(session/close) before opening another")

    def _new_store(self, cwd: str, parent: str | None = None, entries: Sequence[dict[str, Any]] = (),
                   header_fields: dict[str, Any] | None = None) -> SessionStore:
        self._room_for_one_more()
        session_id = str(uuid.uuid4())
        path = self.sessions_dir / f"{file_stamp()}_{session_id}.jsonl"
        return SessionStore.create(path, session_id, cwd, parent=parent, entries=list(entries),
                                   header_fields=header_fields)

    def create(self, cwd: str | None = None, name: str | None = None, model: str | None = None,
               mcp_servers: Sequence[ServerConfig] = ()) -> AgentSession:
        """A new session; ``mcp_servers`` are MCP servers of its own (ACP's ``session/new{mcpServers}``)."""
        chosen = self.default_model
        if model:
            try:
                chosen = self.registry.resolve(model)
            except ModelUnavailable as exc:
                raise SessionError("model", str(exc)) from None
        folder = self.working_folder(cwd).cwd
        store = self._new_store(str(folder))
        if chosen is not None:
            store.append("model_change", provider=chosen.provider, modelId=chosen.id)
        store.append("thinking_level_change", thinkingLevel="off")
        if name:
            store.append("session_info", name=name)
        store.sync()
        session = self._open(store, model=chosen, name=name, mcp_servers=mcp_servers)
        if chosen is None and self.registry.default_withheld is not None:  # --model named one not trusted yet
            session.withhold_model(*self.registry.default_withheld)
        return session

    def create_or_detached(self) -> AgentSession:
        """A new session; in a workspace whose session folder is read-only, one without a file."""
        try:
            return self.create()
        except SessionReadOnly as exc:
            session_id = str(uuid.uuid4())
            path = self.sessions_dir / f"{file_stamp()}_{session_id}.jsonl"
            log.warning("%s", exc)
            store = SessionStore.detached(path, session_id, os.path.abspath(self.workspace), str(exc))
            return self._open(store, model=self.default_model)

    def get(self, session_id: str) -> AgentSession:
        """The named open session."""
        session = self.sessions.get(session_id)
        if session is None:
            raise SessionNotFound(f"no open session with id {session_id!r}: open it with session/load")
        return session

    def find_file(self, session_id: str | None, file: str | None) -> Path:
        if file:
            path = Path(file)
            return path if path.is_absolute() else Path(self.workspace) / path
        if not session_id:
            raise SessionNotFound("session/load needs a sessionId or a file")
        if os.path.islink(self.sessions_dir):
            raise SessionFileError(f"{self.sessions_dir} is a symbolic link: sessions are never read or written "
                                   "through it (a repository could point it anywhere)")
        matches = sorted(self.sessions_dir.glob(f"*_{session_id}.jsonl")) if self.sessions_dir.is_dir() else []
        if not matches:
            raise SessionNotFound(f"no session with id {session_id!r} in {self.sessions_dir}")
        return matches[-1]

    def in_sessions_dir(self, path: Path) -> bool:
        """``path`` names a file directly in the session folder (a symlink there is opened as one:
        refused), the folder itself reached without a symlink."""
        return not os.path.islink(self.sessions_dir) and path.parent.resolve() == self.sessions_dir.resolve()

    def load(self, session_id: str | None = None, file: str | None = None,
             allow_outside: bool = False) -> tuple[AgentSession, bool]:
        """Open a stored session (or return it if open); ``(session, interrupted)``."""
        wanted = self.find_file(None, file).resolve() if file else None
        for open_session in self.sessions.values():
            if open_session.id == session_id or Path(open_session.file).resolve() == wanted:
                return open_session, not open_session.busy and interrupted(open_session.messages)
        path = self.find_file(session_id, file)
        self._room_for_one_more()
        read_only = None
        if not self.in_sessions_dir(path):
            field = "file" if file else "sessionId"
            if not allow_outside:
                raise OutsidePath(field, f"{path} is outside this workspace's session folder {self.sessions_dir}; "
                                         "pass allowOutside: true to open it read-only")
            read_only = f"{path} is outside the session folder {self.sessions_dir}: the session is open read-only"
        with collector_paused():
            return self._load_file(path, read_only)

    def _load_file(self, path: Path, read_only: str | None) -> tuple[AgentSession, bool]:
        store = SessionStore.open(path, read_only=read_only, known=load_index.read if read_only is None else None)
        if store.header.get("id") in self.sessions:
            store.close()
            raise SessionFileError(f"{store.path} has the id of another open session")
        if store.facts is not None:
            return self._open_indexed(store), store.facts.interrupted
        if store.torn_file is not None:
            log.warning("%s ended in a torn line; it was cut off and saved to %s", store.path, store.torn_file)
        session = self._open_stored(store, self.default_model)
        bad = []
        for entry in pending_queue(store):
            message, reason = readable_message({**entry, "type": "message"})
            if reason is not None:
                bad.append((entry, reason))
                continue
            queue = session.agent.steering if entry.get("kind") == "steer" else session.agent.follow_ups
            queue.push(message, entry["queueId"])
            session.recorder.restored(message, entry["queueId"])
        if bad:
            store.set_aside(bad)
        if store.skipped:
            log.warning("%s: %d line(s) could not be read and were set aside (left in the file): %s", store.path,
                        len(store.skipped), ", ".join(f"line {s['line']}: {s['reason']}" for s in store.skipped[:5]))
        stopped = interrupted(session.messages)
        store.read_as = (store.size, len(session.messages), stopped)
        return session, stopped

    def _open_indexed(self, store: SessionStore) -> AgentSession:
        """A session for a file whose index says what a full load would find; its entries and
        messages are read from the file when first asked for (the first prompt, a replay)."""
        facts = store.facts
        session = self._open_with_stored_model(store, facts.model, self.default_model,
                                               thinking_level=facts.thinking_level or "off", name=facts.name)

        def read_context(store: SessionStore) -> None:  # within read_all's collector_paused
            if session.agent.state.deferred:  # else the transcript was set anew before the file was read
                session.agent.state.messages = context_messages(store, store.branch())

        if store.read:  # opening it read the entries already (a face summing its cost): no reading left to defer
            session.agent.state.messages = context_messages(store, store.branch())
            return session
        store.on_read = read_context
        session.agent.state.defer_messages(store.read_all, facts.messages)
        return session

    def _index_on_close(self, store: SessionStore) -> None:
        """Before a session's file is closed: what a full load of it finds, kept beside it
        (:mod:`.load_index`), when the file changed since its index was written."""
        if store.indexed_size == store.size or store.read_only is not None or not store.has_file \
                or not self.in_sessions_dir(store.path):
            return
        if pending_queue(store):
            load_index.remove(store.path)  # a queue is restored by a full load only
            return
        size, count, stopped = store.read_as
        if size != store.size:  # written to since it was read: the messages as a load reads them
            with collector_paused():
                messages = context_messages(store)
            count, stopped = len(messages), interrupted(messages)
        branch = store.branch()
        model, level = settings(store, branch)
        facts = load_index.Facts(model=model, thinking_level=level, name=session_name(store),
                                 side=store.of_type(*INDEXED_SIDE_ENTRIES), skipped=list(store.skipped),
                                 messages=count, interrupted=stopped, plan=branch_plan(branch)[1])
        load_index.write(store.path, store.fd, store.size, facts)

    def _stored_model(self, store: SessionStore, model_ref: tuple[str, str] | None,
                      fallback: Model | None) -> tuple[Model | None, ModelUnavailable | None]:
        """The model a stored session used, else ``fallback``; a model only the untrusted workspace
        defines gives no model, and why (the session says so until the workspace is trusted)."""
        if model_ref is not None:
            try:
                return self.registry.find(*model_ref), None
            except ModelUnavailable as exc:
                if exc.untrusted:
                    log.warning("session %s: %s; it is open with no model", store.header["id"], exc)
                    return None, exc
                log.warning("session %s used model %s/%s, which is not known here", store.header["id"], *model_ref)
        return fallback, None

    def _open_with_stored_model(self, store: SessionStore, model_ref: tuple[str, str] | None,
                                fallback: Model | None, **kwargs: Any) -> AgentSession:
        model, withheld = self._stored_model(store, model_ref, fallback)
        session = self._open(store, model=model, **kwargs)
        if withheld is not None and model_ref is not None:
            session.withhold_model(model_ref, str(withheld))
        elif model is None and self.registry.default_withheld is not None:  # no model of its own: --model's
            session.withhold_model(*self.registry.default_withheld)
        return session

    def _open_stored(self, store: SessionStore, fallback: Model | None) -> AgentSession:
        """A session for a file: its context, model and thinking level rebuilt from the branch."""
        branch = store.branch()
        model_ref, level = settings(store, branch)
        return self._open_with_stored_model(store, model_ref, fallback, thinking_level=level or "off",
                                            messages=context_messages(store, branch), name=session_name(store))

    def fork(self, session: AgentSession, entry_id: str) -> tuple[AgentSession, str]:
        entry = session.store.by_id.get(entry_id)
        if entry is None:
            raise EntryError(f"no entry with id {entry_id!r} in this session")
        message, reason = readable_message(entry) if entry.get("type") == "message" else (None, None)
        if reason is not None:
            raise EntryError(f"entry {entry_id!r} cannot be read ({reason})")
        if getattr(message, "role", None) != "user":
            role = getattr(message, "role", None)
            what = f"a {role} message" if message is not None else f"a {entry.get('type')} entry"
            raise EntryError(f"entry {entry_id!r} is {what}; fork needs a user message")
        path = session.store.branch(entry.get("parentId")) if entry.get("parentId") else []
        text = user_text(message)
        return self._copy(session, path), text

    def clone(self, session: AgentSession) -> AgentSession:
        return self._copy(session, session.store.branch())

    def _copy(self, session: AgentSession, path: list[dict[str, Any]]) -> AgentSession:
        store = self._new_store(session.cwd, parent=session.file, entries=path)
        return self._open_stored(store, session.model)

    def refresh_models(self) -> None:
        """After the registry was reloaded: the default and every open session use the new
        definition of their model."""
        def current(model: Model) -> Model:
            try:
                return self.registry.find(model.provider, model.id)
            except ModelUnavailable:
                return model

        def withheld(held: tuple[tuple[str, str], str] | None) -> Model | None:
            """A model refused while the workspace was untrusted, if it may be used now."""
            try:
                return self.registry.find(*held[0]) if held is not None else None
            except ModelUnavailable:
                return None

        if self.default_model is not None:
            try:
                self.default_model = self.registry.find(self.default_model.provider, self.default_model.id)
            except ModelUnavailable:  # its server was removed: as at a start without it
                self.default_model = self.registry.default(None)
        elif (model := withheld(self.registry.default_withheld)) is not None:  # ``--model`` names its provider
            self.default_model = model
        for session in self.sessions.values():
            if session.model is not None:
                session.model = session.agent.state.model = current(session.model)
            elif (model := withheld(session.model_withheld)) is not None:  # trusted since it was opened
                session.model = session.agent.state.model = model
                session.model_withheld = None

    def remember_default(self, model: Model) -> None:
        """The model the user chose: the default for new sessions, now and at the next start."""
        self.default_model = model
        self.registry.default_withheld = None
        remember_model(model.provider, model.id)

    async def close(self, session: AgentSession) -> None:
        await session.close()
        await self.processes.close_session(session.id)
        self.sessions.pop(session.id, None)
        if self.permissions is not None:
            self.permissions.parents.pop(session.id, None)
        if self.mcp is not None:
            self.mcp.detach(session.id)
        clean_spill(self.spill_dir)
        if self.on_close is not None:
            self.on_close(session)

    async def delete(self, session_id: str | None, file: str | None) -> str:
        open_session = self.sessions.get(session_id or "") if session_id else None
        path = Path(open_session.file) if open_session else self.find_file(session_id, file)
        if not self.in_sessions_dir(path):
            raise SessionFileError(f"{path} is not in this workspace's session folder {self.sessions_dir}")
        if open_session is not None and open_session.store.read_only is not None:
            raise SessionReadOnly(open_session.store.read_only)
        if open_session is not None:
            await self.close(open_session)
        else:
            SessionStore.open(path).close()  # refuses when another process holds it
        try:
            path.unlink()
        except OSError as exc:
            raise storage_error(exc, path, "delete") from None
        load_index.remove(path)
        return str(path)

    async def abort_all(self) -> None:
        for session in list(self.sessions.values()):
            session.abort_bash()
            await session.abort()

    def close_input(self) -> None:
        """No more client input: user commands without a timeout are aborted (now and later)."""
        self.input_closed = True
        for session in self.sessions.values():
            session.close_input()

    async def wait_all_settled(self) -> None:
        for session in list(self.sessions.values()):
            await session.wait_settled()

    def close_files(self) -> None:
        for session in self.sessions.values():
            session.store.close()
        clean_spill(self.spill_dir)


__all__ = ["EntryError", "OutsidePath", "SessionFileError", "SessionLocked", "SessionManager", "SessionNotFound"]
