"""Sessions: one conversation each (agent + model state), and the set a daemon holds open."""

from .agent_session import AgentSession, SessionError
from .manager import EntryError, SessionManager, SessionNotFound

__all__ = ["AgentSession", "EntryError", "SessionError", "SessionManager", "SessionNotFound"]
