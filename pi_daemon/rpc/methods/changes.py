"""The editor as the agent's file system: a run's changes (``changes/get``, ``changes/revert``,
``changes/accept``), which buffers are unsaved (``fs/didChangeDirty``), and the editor context
of prompts (see :mod:`...session.changes`, :mod:`...session.editor_context`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ...converter import from_wire
from .. import types as t
from ...wire.errors import AgentBusy, InvalidParams, InvalidState, SessionNotFoundError
from ..registry import method

if TYPE_CHECKING:
    from ...session import AgentSession
    from ...session.stored_runs import ChangeError
    from ..context import Context


def _invalid(exc: ChangeError) -> InvalidParams:
    return InvalidParams(f"invalid params: params.{exc.field}: {exc}")


def _choices(files: list[t.FileChoice] | None) -> list[dict[str, Any]] | None:
    return None if files is None else [{"path": f.path, "hunk_ids": f.hunk_ids} for f in files]


@method("changes/get", params=t.ChangesGetParams, result=t.ChangesResult,
        errors=(SessionNotFoundError, InvalidParams), summary="what a run changed: files, hunks, diffs")
async def changes_get(ctx: "Context", p: t.ChangesGetParams) -> t.ChangesResult:
    from ...session.stored_runs import ChangeError

    session = ctx.session(p.session_id)
    try:
        run_id, files = session.changes.get(p.run_id, p.path, p.with_content)
    except ChangeError as exc:
        raise _invalid(exc) from None
    return t.ChangesResult(run_id=run_id, files=from_wire(files, list[t.ChangedFile]),
                           runs=list(session.changes.runs()))


@method("changes/revert", params=t.ChangesRevertParams, result=t.ChangesRevertResult,
        errors=(SessionNotFoundError, AgentBusy, InvalidParams, InvalidState),
        summary="take back a run's files or hunks")
async def changes_revert(ctx: "Context", p: t.ChangesRevertParams) -> t.ChangesRevertResult:
    from ...session.stored_runs import ChangeError
    from ...guard.workspace import PathRefused

    session = ctx.session(p.session_id)
    if session.busy:
        raise AgentBusy("a run is active: revert its changes once it has settled (or abort it)")
    try:
        result = await session.changes.revert(p.run_id, _choices(p.files), session.files)
    except ChangeError as exc:
        raise _invalid(exc) from None
    except (OSError, PathRefused) as exc:
        raise InvalidState(f"the revert could not be written: {getattr(exc, 'strerror', None) or exc}") from None
    reverted: t.ChangesRevertResult = from_wire(result, t.ChangesRevertResult)
    return reverted


@method("changes/accept", params=t.ChangesAcceptParams, result=t.ChangesAcceptResult,
        errors=(SessionNotFoundError, AgentBusy, InvalidParams), summary="mark a run's hunks reviewed")
async def changes_accept(ctx: "Context", p: t.ChangesAcceptParams) -> t.ChangesAcceptResult:
    from ...session.stored_runs import ChangeError

    session = ctx.session(p.session_id)
    live = session.changes.run_id
    if live is not None and (p.run_id or next(reversed(session.changes.runs()), None)) == live:
        # Its hunks still move (a later edit replaces, merges or renumbers them): a mark would not hold.
        raise AgentBusy(f"run {live} is still active: accept its changes once it has settled (or abort it)")
    try:
        run_id, count = session.changes.accept(p.run_id, _choices(p.files))
    except ChangeError as exc:
        raise _invalid(exc) from None
    return t.ChangesAcceptResult(run_id=run_id, accepted=count)


@method("fs/didChangeDirty", params=t.DidChangeDirtyParams, result=None,
        summary="which buffers have unsaved changes now")
async def did_change_dirty(ctx: "Context", p: t.DidChangeDirtyParams) -> None:
    ctx.client.dirty_buffers = [os.path.abspath(os.path.join(ctx.workspace, path)) for path in p.paths]


async def with_context(session: AgentSession, text: str, context: list[t.ContextItem] | None) -> str:
    """The prompt's text with its editor context rendered after it."""
    if not context:
        return text
    from ...session.editor_context import render
    from ...guard.workspace import READ, PathRefused

    for n, item in enumerate(context):
        try:
            session.files.workspace.locate(item.path, READ)
        except PathRefused as exc:
            raise InvalidParams(f"invalid params: params.context[{n}].path: {exc}") from None
    try:
        block = await render(context, session.files)
    except (OSError, PathRefused) as exc:
        raise InvalidParams(f"invalid params: params.context: {getattr(exc, 'strerror', None) or exc}") from None
    return f"{text}\n\n{block}"
