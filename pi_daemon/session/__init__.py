"""Sessions: one conversation each (agent + model state), and the set a daemon holds open."""

from .agent_session import AgentSession, SessionError
from .manager import SessionManager, SessionNotFound

__all__ = ["AgentSession", "SessionError", "SessionManager", "SessionNotFound"]
