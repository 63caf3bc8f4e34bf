"""The open sessions of one daemon and which of them is current."""

from __future__ import annotations

import logging
import os
from typing import Callable

from ..llm.model import Model
from ..llm.registry import ModelRegistry, ModelUnavailable
from .agent_session import AgentSession, SessionError

log = logging.getLogger(__name__)


class SessionNotFound(Exception):
    pass


class SessionManager:
    def __init__(
        self,
        registry: ModelRegistry,
        workspace: str,
        default_model: Model | None,
        on_open: Callable[[AgentSession], None] | None = None,
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        self.default_model = default_model
        self.on_open = on_open
        self.sessions: dict[str, AgentSession] = {}
        self.current: AgentSession | None = None

    def create(
        self, cwd: str | None = None, name: str | None = None, model: str | None = None
    ) -> AgentSession:
        chosen = self.default_model
        if model:
            try:
                chosen = self.registry.resolve(model)
            except ModelUnavailable as exc:
                raise SessionError("model", str(exc)) from None
        session = AgentSession(
            self.registry,
            cwd=os.path.abspath(cwd or self.workspace),
            model=chosen,
            name=name,
        )
        self.sessions[session.id] = session
        self.current = session
        log.info("session %s opened (model %s)", session.id, chosen.spec if chosen else "none")
        if self.on_open is not None:
            self.on_open(session)
        return session

    def get(self, session_id: str | None, *, create: bool = False) -> AgentSession:
        """The named session, else the current one (created when ``create`` and none)."""
        if session_id:
            session = self.sessions.get(session_id)
            if session is None:
                raise SessionNotFound(f"no open session with id {session_id!r}")
            return session
        if self.current is None:
            if create:
                return self.create()
            raise SessionNotFound("there is no current session: call session/new or prompt first")
        return self.current

    async def abort_all(self) -> None:
        for session in list(self.sessions.values()):
            await session.abort()

    async def wait_all_settled(self) -> None:
        for session in list(self.sessions.values()):
            await session.wait_settled()
