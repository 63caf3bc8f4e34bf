"""Handlers of ``changes/get``, ``changes/revert``, ``changes/accept``, and the editor context
of prompts (see :mod:`..session.changes`, :mod:`..session.editor_context`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..converter import from_wire
from ..session.changes import ChangeError
from ..session.editor_context import render
from ..tools.workspace import READ, PathRefused
from . import types as t
from .errors import AGENT_BUSY, INVALID_PARAMS, INVALID_STATE, RpcError

if TYPE_CHECKING:
    from .server import Daemon


def _invalid(exc: ChangeError) -> RpcError:
    return RpcError(INVALID_PARAMS, f"invalid params: params.{exc.field}: {exc}")


def _choices(files: list[t.FileChoice] | None) -> list[dict] | None:
    return None if files is None else [{"path": f.path, "hunk_ids": f.hunk_ids} for f in files]


async def changes_get(daemon: "Daemon", p: t.ChangesGetParams) -> t.ChangesResult:
    session = daemon.sessions.get(p.session_id)
    try:
        run_id, files = session.changes.get(p.run_id, p.path, p.with_content)
    except ChangeError as exc:
        raise _invalid(exc) from None
    return t.ChangesResult(run_id=run_id, files=from_wire(files, list[t.ChangedFile]),
                           runs=list(session.changes.runs()))


async def changes_revert(daemon: "Daemon", p: t.ChangesRevertParams) -> t.ChangesRevertResult:
    session = daemon.sessions.get(p.session_id)
    if session.busy:
        raise RpcError(AGENT_BUSY, "a run is active: revert its changes once it has settled (or abort it)")
    try:
        result = await session.changes.revert(p.run_id, _choices(p.files), session.files)
    except ChangeError as exc:
        raise _invalid(exc) from None
    except (OSError, PathRefused) as exc:
        raise RpcError(INVALID_STATE, f"the revert could not be written: {getattr(exc, 'strerror', None) or exc}") \
            from None
    return from_wire(result, t.ChangesRevertResult)


async def changes_accept(daemon: "Daemon", p: t.ChangesAcceptParams) -> t.ChangesAcceptResult:
    session = daemon.sessions.get(p.session_id)
    try:
        run_id, count = session.changes.accept(p.run_id, _choices(p.files))
    except ChangeError as exc:
        raise _invalid(exc) from None
    return t.ChangesAcceptResult(run_id=run_id, accepted=count)


async def with_context(session, text: str, context: list[t.ContextItem] | None) -> str:
    """The prompt's text with its editor context rendered after it."""
    if not context:
        return text
    for n, item in enumerate(context):
        try:
            session.files.workspace.locate(item.path, READ)
        except PathRefused as exc:
            raise RpcError(INVALID_PARAMS, f"invalid params: params.context[{n}].path: {exc}") from None
    try:
        block = await render(context, session.files)
    except (OSError, PathRefused) as exc:
        raise RpcError(INVALID_PARAMS, f"invalid params: params.context: {getattr(exc, 'strerror', None) or exc}") \
            from None
    return f"{text}\n\n{block}"


async def did_change_dirty(daemon: "Daemon", p: t.DidChangeDirtyParams) -> None:
    daemon.client.dirty_buffers = [os.path.abspath(os.path.join(daemon.workspace, path)) for path in p.paths]


CHANGE_HANDLERS = {
    "fs/didChangeDirty": did_change_dirty,
    "changes/get": changes_get,
    "changes/revert": changes_revert,
    "changes/accept": changes_accept,
}
