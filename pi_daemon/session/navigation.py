"""Moving the leaf inside one session file (Pi's ``/tree``), and summarising the branch left.

The leaf moves with a ``leaf`` entry, so the position survives a restart; the next
message hangs under the new position, starting a new branch beside the old one (both
stay in the file). With a summary, the entries of the branch being left — from the old
leaf back to the deepest entry it shares with the new position — are summarised by the
session's model into a ``branch_summary`` entry (``fromId``: the old leaf) under the
new position; it becomes the leaf, so the summary joins the context there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..cancel import CancelToken
from ..converter import to_wire
from ..llm.registry import ModelUnavailable
from ..messages import user_text
from . import compaction as C
from .rebuild import CONTEXT_TYPES, context_messages, readable_message, settings
from .store import SessionStore

if TYPE_CHECKING:
    from .agent_session import AgentSession

BRANCH_PROMPT = ("The conversation below is a branch the user is leaving to continue from an earlier point. "
                 "Summarise what was tried and learned on it, so the work can go on without it.")


def abandoned(store: SessionStore, old_leaf: str | None, target: str) -> list[dict[str, Any]]:
    """The readable context entries from the old leaf back to where its path meets ``target``'s."""
    shared = {e["id"] for e in store.branch(target)}
    left = []
    for entry in reversed(store.branch(old_leaf) if old_leaf else []):
        if entry["id"] in shared:
            break
        if entry.get("type") in CONTEXT_TYPES and readable_message(entry)[1] is None:
            left.append(entry)
    return left[::-1]


async def summarize(model: Any, api_key: str | None, entries: list[dict[str, Any]], instructions: str | None,
                    cancel: CancelToken) -> tuple[str, Any, dict[str, Any]]:
    """``(summary, usage, details)`` of a branch; raises CompactionError."""
    read, modified = C.files_touched(entries, None)
    parts = [BRANCH_PROMPT, f"<conversation>\n{C.transcript(entries)}\n</conversation>", C.SUMMARY_FORMAT,
             "Files read on the branch: " + (", ".join(read) or "none") + "\nFiles modified on the branch: "
             + (", ".join(modified) or "none")]
    if instructions:
        parts.append(f"Focus of this summary, from the user: {instructions}")
    text, usage = await C.ask(model, api_key, "\n\n".join(parts), cancel)
    return text, usage, {"readFiles": read, "modifiedFiles": modified}


async def navigate(session: "AgentSession", entry_id: str, summarize_left: bool = False,
                   instructions: str | None = None) -> dict[str, Any] | None:
    """Move the session's leaf to ``entry_id``; the ``branch_summary`` entry written, or None.

    Refused while a run is active; the summary request runs as the session's activity
    (``abort`` cancels it) and when it fails nothing moves."""
    from .agent_session import EntryError, SessionError

    session.check_writable()
    if session.busy:
        raise SessionError("busy", "a run is active: abort it or wait for agent_settled before moving in the tree")
    store = session.store
    if entry_id not in store.by_id:
        raise EntryError(f"no entry with id {entry_id!r} in this session (session/tree lists them)")
    old_leaf = store.leaf_id
    left = abandoned(store, old_leaf, entry_id) if summarize_left else []
    summary = None
    if left:
        model = session.check_model()
        session.navigation = CancelToken()
        try:
            summary = await summarize(model, session.registry.api_key(model), left, instructions, session.navigation)
        except C.CompactionError as exc:
            raise SessionError("state", f"the branch could not be summarised ({exc}); the position did not move") \
                from None
        finally:
            session.navigation = None
    if entry_id != old_leaf:
        store.set_leaf(entry_id)
    entry = None
    if summary is not None:
        text, usage, details = summary
        entry = store.append("branch_summary", fromId=old_leaf, summary=text, details=details, usage=to_wire(usage))
    store.sync()
    follow_leaf(session)
    await session.observers.emit(session.plan.event())  # the plan as it stood at the new position
    return entry


def tree(store: SessionStore) -> dict[str, Any]:
    """``{nodes, leafId}`` of ``session/tree``: every tree entry in file order, in wire form."""
    labels = {e.get("targetId"): e.get("label") for e in store.entries if e.get("type") == "label"}
    on_path = {e["id"] for e in store.branch()}
    children: dict[Any, int] = {}
    for entry in store.by_id.values():
        children[entry.get("parentId")] = children.get(entry.get("parentId"), 0) + 1
    return {"nodes": [_node(e, labels, on_path, children) for e in store.by_id.values()], "leafId": store.leaf_id}


def _node(entry: dict[str, Any], labels: dict[Any, Any], on_path: set[str], children: dict[Any, int]
          ) -> dict[str, Any]:
    message, text = entry.get("message"), None
    message = message if isinstance(message, dict) else {}
    if entry.get("type") == "message":
        readable, _ = readable_message(entry)
        if readable is None:
            text = None
        elif getattr(readable, "role", None) == "assistant":
            text = "".join(b.text for b in readable.content if getattr(b, "type", None) == "text")[:200]
        else:
            text = user_text(readable)[:200]
    elif entry.get("type") in ("compaction", "branch_summary"):
        text = (entry.get("summary") or "")[:200]
    node = {"id": entry["id"], "type": entry.get("type", ""), "timestamp": entry.get("timestamp", ""),
            "onPath": entry["id"] in on_path, "childCount": children.get(entry["id"], 0),
            "parentId": entry.get("parentId"), "role": message.get("role"), "text": text,
            "label": labels.get(entry["id"])}
    return {k: v for k, v in node.items() if v is not None}


def follow_leaf(session: "AgentSession") -> None:
    """The context, model and thinking level of the path to the leaf, as a reload would give them."""
    branch = session.store.branch()
    session.agent.state.messages = context_messages(session.store, branch)
    model_ref, level = settings(session.store, branch)
    if model_ref is not None:
        try:
            session.model = session.agent.state.model = session.registry.find(*model_ref)
        except ModelUnavailable:
            pass  # the model the branch used is not known here: keep the current one
    if level is not None:
        session.agent.state.thinking_level = level  # type: ignore[assignment]
