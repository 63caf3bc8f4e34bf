"""Sessions: create, open, list, fork, label, inspect and export the conversation files (``session/*``)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ...converter import from_wire, to_wire
from .. import types as t
from ...wire.errors import (
    AgentBusy,
    InvalidParams,
    InvalidState,
    ModelUnavailableError,
    SessionFile,
    SessionLockedError,
    SessionNotFoundError,
    SessionReadOnlyError,
    SessionWriteFailed,
)
from ..params import not_negative
from ..registry import method
from ..state import session_state

MAX_QUERY_CHARS = 200
MAX_SEARCH_MATCHES = 500

if TYPE_CHECKING:
    from ..context import Context

_OPEN_ERRORS = (SessionNotFoundError, SessionFile, SessionLockedError)
_WRITE_ERRORS = (SessionNotFoundError, SessionReadOnlyError, SessionWriteFailed)


@method("session/new", params=t.SessionNewParams, result=t.SessionNewResult,
        errors=(ModelUnavailableError, SessionWriteFailed, InvalidParams, InvalidState),
        summary="create a session; it becomes current")
async def session_new(ctx: "Context", p: t.SessionNewParams) -> t.SessionNewResult:
    from ..extensions import mcp_configs

    servers = mcp_configs(to_wire(p.mcp_servers), p.cwd or ctx.workspace)
    session = ctx.sessions.create(cwd=p.cwd, name=p.name, model=p.model, mcp_servers=servers)
    return t.SessionNewResult(session_id=session.id, file=session.file)


@method("session/load", params=t.SessionLoadParams, result=t.SessionLoadResult,
        errors=_OPEN_ERRORS + (SessionWriteFailed, InvalidState, InvalidParams),
        summary="open a stored session, or attach to an open one; it becomes current")
async def session_load(ctx: "Context", p: t.SessionLoadParams) -> t.SessionLoadResult:
    session, interrupted = ctx.sessions.load(p.session_id, p.file, allow_outside=p.allow_outside)
    # What was asked for (a replay, the events missed) follows the reply: a session opened from its
    # index reads its file for a replay, which should not hold the reply back.
    next_seq, catch_up = ctx.hub.attach(ctx.connection, session, p.from_seq, p.replay)
    store = session.store
    skipped = [t.SkippedLine(line=s["line"] or 0, reason=s["reason"]) for s in store.skipped] or None
    torn = str(store.torn_file) if store.torn_file else None
    return t.SessionLoadResult(session_id=session.id, file=session.file, state=session_state(ctx, session),
                               interrupted=interrupted, next_seq=next_seq, catch_up=catch_up,
                               torn_line_saved_to=torn, skipped=skipped,
                               model_withheld=session.model_withheld[1] if session.model_withheld else None)


@method("session/list", params=t.SessionListParams, result=t.SessionListResult,
        summary="the workspace's sessions, newest first")
async def session_list(ctx: "Context", p: t.SessionListParams) -> t.SessionListResult:
    from ...session.listing import list_sessions

    found = await asyncio.to_thread(list_sessions, ctx.sessions.sessions_dir, p.cwd)  # never holds the loop
    return t.SessionListResult(sessions=[from_wire(d, t.SessionSummary) for d in found])


@method("session/search", params=t.SessionSearchParams, result=t.SessionSearchResult, errors=(InvalidParams,),
        summary="what was said in the workspace's sessions, searched for a text")
async def session_search(ctx: "Context", p: t.SessionSearchParams) -> t.SessionSearchResult:
    from ...session.search import search

    if not p.query.strip() or len(p.query) > MAX_QUERY_CHARS:
        raise InvalidParams(f"invalid params: params.query: 1 to {MAX_QUERY_CHARS} characters, not only spaces")
    if not 1 <= p.limit <= MAX_SEARCH_MATCHES:
        raise InvalidParams(f"invalid params: params.limit: 1 to {MAX_SEARCH_MATCHES}")
    found, more, skipped = await asyncio.to_thread(search, ctx.sessions.sessions_dir, p.query, p.limit)
    return t.SessionSearchResult(matches=[from_wire(m, t.SessionSearchMatch) for m in found], truncated=more,
                                 skipped=[from_wire(s, t.SessionSearchSkipped) for s in skipped] or None)


@method("session/fork", params=t.SessionForkParams, result=t.SessionForkResult,
        errors=(SessionNotFoundError, InvalidParams, SessionWriteFailed, InvalidState),
        summary="new session with the path before a user message")
async def session_fork(ctx: "Context", p: t.SessionForkParams) -> t.SessionForkResult:
    forked, text = ctx.sessions.fork(ctx.session(p.session_id), p.entry_id)
    return t.SessionForkResult(session_id=forked.id, file=forked.file, text=text)


@method("session/clone", params=t.SessionRef, result=t.SessionNewResult,
        errors=(SessionNotFoundError, SessionWriteFailed, InvalidState),
        summary="new session with the whole current path")
async def session_clone(ctx: "Context", p: t.SessionRef) -> t.SessionNewResult:
    cloned = ctx.sessions.clone(ctx.session(p.session_id))
    return t.SessionNewResult(session_id=cloned.id, file=cloned.file)


@method("session/delete", params=t.SessionDeleteParams, result=t.SessionDeleteResult,
        errors=_OPEN_ERRORS + (AgentBusy,), summary="delete a session file")
async def session_delete(ctx: "Context", p: t.SessionDeleteParams) -> t.SessionDeleteResult:
    current = ctx.connection.current
    session_id = p.session_id or (current.id if current is not None and not p.file else None)
    return t.SessionDeleteResult(file=await ctx.sessions.delete(session_id, p.file))


@method("session/setName", params=t.SetNameParams, result=t.SetNameResult,
        errors=_WRITE_ERRORS, summary="name the session")
async def session_set_name(ctx: "Context", p: t.SetNameParams) -> t.SetNameResult:
    session = ctx.session(p.session_id)
    await session.set_name(p.name.strip())
    return t.SetNameResult(name=session.name)


@method("session/close", params=t.SessionRef, result=t.ClosedResult,
        errors=(SessionNotFoundError,), summary="close an open session (for this connection; others may hold it)")
async def session_close(ctx: "Context", p: t.SessionRef) -> t.ClosedResult:
    await ctx.hub.release(ctx.connection, ctx.session(p.session_id))
    return t.ClosedResult(closed=True)


@method("session/label", params=t.LabelParams, result=t.LabelResult,
        errors=_WRITE_ERRORS + (InvalidParams,), summary="set or clear a label on an entry")
async def session_label(ctx: "Context", p: t.LabelParams) -> t.LabelResult:
    store = ctx.session(p.session_id).store
    if p.entry_id not in store.by_id:
        raise InvalidParams(f"invalid params: params.entryId: no entry with id {p.entry_id!r}")
    label = (p.label or "").strip() or None
    store.append("label", targetId=p.entry_id, label=label)
    store.sync()
    return t.LabelResult(entry_id=p.entry_id, label=label)


@method("session/entries", params=t.EntriesParams, result=t.EntriesResult,
        errors=(SessionNotFoundError, InvalidParams), summary="raw entries after a cursor")
async def session_entries(ctx: "Context", p: t.EntriesParams) -> t.EntriesResult:
    not_negative("limit", p.limit)
    store = ctx.session(p.session_id).store
    entries = store.branch() if p.scope == "branch" else store.entries
    if p.since is not None:
        at = next((n for n, e in enumerate(entries) if e.get("id") == p.since), None)
        if at is None:
            where = "on the current branch (pass scope: \"file\" for every entry)" if p.scope == "branch" else ""
            raise InvalidParams(f"invalid params: params.since: no entry with id {p.since!r} {where}".strip())
        entries = entries[at + 1:]
    entries = list(entries)
    more = p.limit is not None and len(entries) > p.limit
    if p.limit is not None:
        entries = entries[: p.limit]
    cursor = entries[-1].get("id") if entries else p.since
    return t.EntriesResult(header=store.header, entries=entries, more=more, cursor=cursor)


@method("session/tree", params=t.SessionRef, result=t.TreeResult,
        errors=(SessionNotFoundError,), summary="the entry tree")
async def session_tree(ctx: "Context", p: t.SessionRef) -> t.TreeResult:
    from ...session.navigation import tree

    result: t.TreeResult = from_wire(tree(ctx.session(p.session_id).store), t.TreeResult)
    return result


@method("session/navigate", params=t.NavigateParams, result=t.NavigateResult,
        errors=(SessionNotFoundError, InvalidParams, AgentBusy, InvalidState, SessionReadOnlyError, SessionWriteFailed),
        summary="move the current position to another entry")
async def session_navigate(ctx: "Context", p: t.NavigateParams) -> t.NavigateResult:
    from ...session.navigation import navigate

    session = ctx.session(p.session_id)
    summary = await navigate(session, p.entry_id, p.summarize, p.custom_instructions)
    return t.NavigateResult(state=session_state(ctx, session), leaf_id=session.store.leaf_id,
                            summary_entry_id=summary["id"] if summary else None)


@method("session/rewind", params=t.RewindParams, result=t.RewindResult,
        errors=(SessionNotFoundError, InvalidParams, AgentBusy, InvalidState, SessionReadOnlyError, SessionWriteFailed),
        summary="continue from an earlier entry, with the workspace's files as they were there")
async def session_rewind(ctx: "Context", p: t.RewindParams) -> t.RewindResult:
    from ...session.rewind import rewind

    done = await rewind(ctx.session(p.session_id), p.entry_id, p.files, p.dry_run)
    result: t.RewindResult = from_wire(done, t.RewindResult)
    return result


@method("session/stats", params=t.SessionRef, result=t.StatsResult,
        errors=(SessionNotFoundError,), summary="counts, tokens, cost, context usage")
async def session_stats(ctx: "Context", p: t.SessionRef) -> t.StatsResult:
    from ...session.compaction import context_tokens
    from ...session.rebuild import stats

    session = ctx.session(p.session_id)
    window = session.model.context_window if session.model else None
    raw = stats(session.store.entries, session.messages, context_tokens(session.messages), window)
    result: t.StatsResult = from_wire(raw, t.StatsResult)
    return result


@method("session/export", params=t.ExportParams, result=t.ExportResult,
        errors=(SessionNotFoundError, InvalidParams),
        summary="the history of the branch or tree as HTML or Markdown")
async def session_export(ctx: "Context", p: t.ExportParams) -> t.ExportResult:
    from ...host.commands import export_session

    session = ctx.session(p.session_id)
    target = export_session(ctx.host, session, p.format, p.path, p.scope, p.allow_outside)
    return t.ExportResult(file=str(target))


