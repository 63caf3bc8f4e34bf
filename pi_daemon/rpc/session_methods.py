"""Handlers of the ``session/*`` methods and of compaction."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..converter import from_wire
from ..messages import user_text
from ..session.compaction import context_tokens
from ..session.export import history, html_page, markdown
from ..session.navigation import navigate
from ..session.listing import list_sessions
from ..session.rebuild import readable_message, stats
from . import types as t
from .errors import AGENT_BUSY, INVALID_PARAMS, RpcError
from .state import session_state

if TYPE_CHECKING:
    from .server import Daemon


def _idle(session) -> None:
    if session.busy:
        raise RpcError(AGENT_BUSY, "a run is active: abort it or wait for agent_settled first")


def _positive(name: str, value: int | None) -> None:
    if value is not None and value < 0:
        raise RpcError(INVALID_PARAMS, f"invalid params: params.{name}: must be 0 or more")


async def session_load(daemon: "Daemon", p: t.SessionLoadParams) -> t.SessionLoadResult:
    session, interrupted = daemon.sessions.load(p.session_id, p.file, allow_outside=p.allow_outside)
    if p.replay:
        asyncio.ensure_future(session.replay())
    store = session.store
    skipped = [t.SkippedLine(line=s["line"] or 0, reason=s["reason"]) for s in store.skipped] or None
    torn = str(store.torn_file) if store.torn_file else None
    return t.SessionLoadResult(session_id=session.id, file=session.file, state=session_state(daemon, session),
                               interrupted=interrupted, next_seq=daemon.event_seqs.get(session.id, 0) + 1,
                               torn_line_saved_to=torn, skipped=skipped)


async def session_list(daemon: "Daemon", p: t.SessionListParams) -> t.SessionListResult:
    found = list_sessions(daemon.sessions.sessions_dir, p.cwd)
    return t.SessionListResult(sessions=[from_wire(d, t.SessionSummary) for d in found])


async def session_fork(daemon: "Daemon", p: t.SessionForkParams) -> t.SessionForkResult:
    forked, text = daemon.sessions.fork(daemon.sessions.get(p.session_id), p.entry_id)
    return t.SessionForkResult(session_id=forked.id, file=forked.file, text=text)


async def session_clone(daemon: "Daemon", p: t.SessionRef) -> t.SessionNewResult:
    cloned = daemon.sessions.clone(daemon.sessions.get(p.session_id))
    return t.SessionNewResult(session_id=cloned.id, file=cloned.file)


async def session_delete(daemon: "Daemon", p: t.SessionDeleteParams) -> t.SessionDeleteResult:
    return t.SessionDeleteResult(file=await daemon.sessions.delete(p.session_id, p.file))


async def session_set_name(daemon: "Daemon", p: t.SetNameParams) -> t.SetNameResult:
    session = daemon.sessions.get(p.session_id)
    await session.set_name(p.name.strip())
    return t.SetNameResult(name=session.name)


async def session_close(daemon: "Daemon", p: t.SessionRef) -> t.ClosedResult:
    await daemon.sessions.close(daemon.sessions.get(p.session_id))
    return t.ClosedResult(closed=True)


async def session_label(daemon: "Daemon", p: t.LabelParams) -> t.LabelResult:
    store = daemon.sessions.get(p.session_id).store
    if p.entry_id not in store.by_id:
        raise RpcError(INVALID_PARAMS, f"invalid params: params.entryId: no entry with id {p.entry_id!r}")
    label = (p.label or "").strip() or None
    store.append("label", targetId=p.entry_id, label=label)
    store.sync()
    return t.LabelResult(entry_id=p.entry_id, label=label)


async def session_entries(daemon: "Daemon", p: t.EntriesParams) -> t.EntriesResult:
    _positive("limit", p.limit)
    store = daemon.sessions.get(p.session_id).store
    entries = store.branch() if p.scope == "branch" else store.entries
    if p.since is not None:
        at = next((n for n, e in enumerate(entries) if e.get("id") == p.since), None)
        if at is None:
            where = "on the current branch (pass scope: \"file\" for every entry)" if p.scope == "branch" else ""
            raise RpcError(INVALID_PARAMS, f"invalid params: params.since: no entry with id {p.since!r} {where}".strip())
        entries = entries[at + 1:]
    entries = list(entries)
    more = p.limit is not None and len(entries) > p.limit
    if p.limit is not None:
        entries = entries[: p.limit]
    cursor = entries[-1].get("id") if entries else p.since
    return t.EntriesResult(header=store.header, entries=entries, more=more, cursor=cursor)


def _node(entry: dict, labels: dict[str, str], on_path: set[str], children: dict[str, int]) -> t.TreeNode:
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
    return t.TreeNode(id=entry["id"], type=entry.get("type", ""), timestamp=entry.get("timestamp", ""),
                      on_path=entry["id"] in on_path, child_count=children.get(entry["id"], 0),
                      parent_id=entry.get("parentId"), role=message.get("role"), text=text,
                      label=labels.get(entry["id"]))


async def session_tree(daemon: "Daemon", p: t.SessionRef) -> t.TreeResult:
    store = daemon.sessions.get(p.session_id).store
    labels = {e.get("targetId"): e.get("label") for e in store.entries if e.get("type") == "label"}
    on_path = {e["id"] for e in store.branch()}
    children: dict[str, int] = {}
    for entry in store.by_id.values():
        children[entry.get("parentId")] = children.get(entry.get("parentId"), 0) + 1
    nodes = [_node(e, labels, on_path, children) for e in store.by_id.values()]
    return t.TreeResult(nodes=nodes, leaf_id=store.leaf_id)


async def session_navigate(daemon: "Daemon", p: t.NavigateParams) -> t.NavigateResult:
    session = daemon.sessions.get(p.session_id)
    summary = await navigate(session, p.entry_id, p.summarize, p.custom_instructions)
    return t.NavigateResult(state=session_state(daemon, session), leaf_id=session.store.leaf_id,
                            summary_entry_id=summary["id"] if summary else None)


async def session_stats(daemon: "Daemon", p: t.SessionRef) -> t.StatsResult:
    session = daemon.sessions.get(p.session_id)
    window = session.model.context_window if session.model else None
    raw = stats(session.store.entries, session.messages, context_tokens(session.messages), window)
    return from_wire(raw, t.StatsResult)


def _export_target(daemon: "Daemon", session, p: t.ExportParams) -> Path:
    """Where to write: inside the workspace (symlinks resolved) unless ``allowOutside``."""
    suffix = ".html" if p.format == "html" else ".md"
    workspace = Path(daemon.workspace).resolve()
    target = Path(p.path) if p.path else workspace / ".pi" / "exports" / f"{session.id}{suffix}"
    if not target.is_absolute():
        target = workspace / target
    real = target.parent.resolve() / target.name
    if not p.allow_outside and not real.is_relative_to(workspace):
        raise RpcError(INVALID_PARAMS, f"invalid params: params.path: {target} is outside the workspace {workspace}; "
                                       "pass allowOutside: true to write there")
    return target


def _write_export(target: Path, text: str, allow_outside: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, 0o644)
    try:
        if not allow_outside and os.fstat(fd).st_nlink > 1:  # a hard link would carry the write elsewhere
            raise RpcError(INVALID_PARAMS, f"invalid params: params.path: {target} has other hard links; "
                                           "pass allowOutside: true to overwrite it")
        os.ftruncate(fd, 0)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)


async def session_export(daemon: "Daemon", p: t.ExportParams) -> t.ExportResult:
    session = daemon.sessions.get(p.session_id)
    title = session.name or f"Session {session.id}"
    items = history(session.store, p.scope)
    text = html_page(items, title) if p.format == "html" else markdown(items, title)
    target = _export_target(daemon, session, p)
    try:
        _write_export(target, text, p.allow_outside)
    except OSError as exc:
        raise RpcError(INVALID_PARAMS, f"invalid params: params.path: cannot write {target}: {exc.strerror}") from None
    return t.ExportResult(file=str(target))


async def compact(daemon: "Daemon", p: t.CompactParams) -> t.CompactResult:
    session = daemon.sessions.get(p.session_id)
    _idle(session)
    result = await session.compact(p.custom_instructions)
    if result is None:
        raise RpcError(-32003, "compaction did not happen; the compaction_end event says why")
    return t.CompactResult(summary=result["summary"], first_kept_entry_id=result["firstKeptEntryId"],
                           tokens_before=result["tokensBefore"], estimated_tokens_after=result["estimatedTokensAfter"])


async def set_auto_compaction(daemon: "Daemon", p: t.SetAutoCompactionParams) -> t.AutoCompactionSettings:
    _positive("reserveTokens", p.reserve_tokens)
    _positive("keepRecentTokens", p.keep_recent_tokens)
    session = daemon.sessions.get(p.session_id, create=True)
    settings = session.set_auto_compaction(p.enabled, p.reserve_tokens, p.keep_recent_tokens)
    return t.AutoCompactionSettings(enabled=settings.enabled, reserve_tokens=settings.reserve_tokens,
                                    keep_recent_tokens=settings.keep_recent_tokens)


SESSION_HANDLERS = {
    "session/load": session_load,
    "session/list": session_list,
    "session/fork": session_fork,
    "session/clone": session_clone,
    "session/delete": session_delete,
    "session/setName": session_set_name,
    "session/close": session_close,
    "session/label": session_label,
    "session/entries": session_entries,
    "session/tree": session_tree,
    "session/stats": session_stats,
    "session/export": session_export,
    "session/navigate": session_navigate,
    "compact": compact,
    "setAutoCompaction": set_auto_compaction,
}
