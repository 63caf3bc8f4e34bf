"""Subagents on the ACP face: a child session is no ACP session of its own.

The client sees a subagent only as its parent's ``task`` tool call, whose content streams
the child's progress (the call's partial results, :mod:`..session.subagents`). So a child's
events are not sent, its permission requests name the parent's session (with the child in
``_meta.pi.subagent``), it follows the parent's mode, and ``session/list`` leaves it out.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

GUARDED = ("write", "edit", "bash")  # what the read-only mode refuses


def mode_refusal(mode: str, tool: str) -> str | None:
    """Why a call is refused in ``mode`` (None: the mode lets it run)."""
    if mode == "read-only" and tool in GUARDED:
        return (f"the session is in read-only mode, so {tool} calls are refused; "
                "the user can switch the mode back to Ask")
    return None


def watch_child(session: Any, parent_mode: Callable[[], str]) -> None:
    """A subagent of an ACP session: its calls follow the parent's mode, then the permission gate."""
    gate_check: Callable[[Any, Any], Awaitable[str | None]] | None = session.agent.before_tool_call

    async def check(ctx: Any, cancel: Any) -> str | None:
        refusal = mode_refusal(parent_mode(), ctx.tool_call.name)
        if refusal is None and gate_check is not None:
            refusal = await gate_check(ctx, cancel)
        return refusal

    session.agent.before_tool_call = check


def asking_session(session: Any, shown: set[str] | dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """For a permission request of ``session``: the ACP session to name (its parent's, for a
    subagent of a session the client has) and what ``_meta.pi`` adds about the subagent."""
    parent = getattr(session, "parent_session_id", None)
    if session is None or parent is None or parent not in shown:
        return None, {}
    return parent, {"subagent": {"sessionId": session.id,
                                 "parentToolCallId": session.store.header.get("parentToolCallId")}}
