"""Protocol types of the editor as the agent's file system: ``fs/*``, ``workspace/applyEdit``,
``changes/*`` and the editor context of a prompt.

Part of :mod:`.types`, which re-exports every name here. Like it, this module needs
nothing but attrs and the event classes: ``WorkspaceEdit`` travels as the plain JSON LSP defines (it is built
with lsprotocol's classes where it is made, off the start-up path).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from ..events import ChangedFile, ChangedHunk

__all__ = [
    "FsCapabilities",
    "Position",
    "Range",
    "ContextItem",
    "DidChangeDirtyParams",
    "ReadTextFileParams",
    "ReadTextFileResult",
    "ApplyWorkspaceEditParams",
    "ApplyWorkspaceEditResult",
    "ChangesGetParams",
    "ChangedHunk",
    "ChangedFile",
    "ChangesResult",
    "FileChoice",
    "ChangesRevertParams",
    "RevertedFile",
    "RevertConflict",
    "ChangesRevertResult",
    "ChangesAcceptParams",
    "ChangesAcceptResult",
]


@attrs.define
class FsCapabilities:
    read_text_file: bool = False
    apply_edit: bool = False


@attrs.define
class Position:
    line: int
    character: int


@attrs.define
class Range:
    start: Position
    end: Position


@attrs.define
class ContextItem:
    path: str
    range: Range | None = None
    text: str | None = None


@attrs.define
class DidChangeDirtyParams:
    paths: list[str]


# --- daemon -> client --------------------------------------------------------------------


@attrs.define
class ReadTextFileParams:
    session_id: str
    path: str
    line: int | None = None
    limit: int | None = None


@attrs.define
class ReadTextFileResult:
    content: str | None = None
    version: int | None = None


@attrs.define
class ApplyWorkspaceEditParams:
    label: str
    edit: dict[str, Any]


@attrs.define
class ApplyWorkspaceEditResult:
    applied: bool
    failure_reason: str | None = None
    failed_change: int | None = None


# --- changes/* ---------------------------------------------------------------------------


@attrs.define
class ChangesGetParams:
    run_id: str | None = None
    path: str | None = None
    with_content: bool = False
    session_id: str | None = None


@attrs.define
class ChangesResult:
    run_id: str
    files: list[ChangedFile]
    runs: list[str]


@attrs.define
class FileChoice:
    path: str
    hunk_ids: list[str] | None = None


@attrs.define
class ChangesRevertParams:
    run_id: str
    files: list[FileChoice] | None = None
    session_id: str | None = None


@attrs.define
class RevertedFile:
    path: str
    hunk_ids: list[str]


@attrs.define
class RevertConflict:
    path: str
    reason: str
    hunk_id: str | None = None


@attrs.define
class ChangesRevertResult:
    run_id: str
    reverted: list[RevertedFile]
    conflicts: list[RevertConflict]


@attrs.define
class ChangesAcceptParams:
    run_id: str | None = None
    files: list[FileChoice] | None = None
    session_id: str | None = None


@attrs.define
class ChangesAcceptResult:
    run_id: str
    accepted: int
