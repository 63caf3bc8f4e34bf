"""Subagents on the ACP face: a child session is no ACP session of its own.

The client sees a subagent only as its parent's ``task`` tool call, whose content streams
the child's progress (the call's partial results, :mod:`..session.subagents`). So a child's
events are not sent, its permission requests name the parent's session (with the child in
``_meta.pi.subagent``), and ``session/list`` leaves it out. It follows its parent's mode as on
every face (:mod:`..session.subagents`).
"""

from __future__ import annotations

from typing import Any

def asking_session(session: Any, shown: set[str] | dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """For a permission request of ``session``: the ACP session to name (its parent's, for a
    subagent of a session the client has) and what ``_meta.pi`` adds about the subagent."""
    parent = getattr(session, "parent_session_id", None)
    if session is None or parent is None or parent not in shown:
        return None, {}
    return parent, {"subagent": {"sessionId": session.id,
                                 "parentToolCallId": session.store.header.get("parentToolCallId")}}
