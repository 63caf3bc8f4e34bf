"""Sessions: one conversation each (agent + model state), and the set a daemon holds open.

The package's names are loaded on first use (PEP 562): ``initialize`` imports
:mod:`.entry_types` (the wire types of stored entries) before the daemon has answered,
and must not pay for the agent, the model registry and httpx that the session
classes bring in.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .agent_session import AgentSession, SessionError
    from .manager import EntryError, SessionManager, SessionNotFound

__all__ = ["AgentSession", "EntryError", "SessionError", "SessionManager", "SessionNotFound"]

_HOME = {"AgentSession": ".agent_session", "SessionError": ".agent_session",
         "EntryError": ".manager", "SessionManager": ".manager", "SessionNotFound": ".manager"}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
