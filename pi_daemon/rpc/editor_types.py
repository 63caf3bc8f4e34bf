"""Protocol types of the editor as the agent's file system: ``fs/*``, ``workspace/applyEdit``,
``changes/*`` and the editor context of a prompt.

Part of :mod:`.types`, which re-exports every name here. Like it, this module needs
nothing but attrs and the event classes. ``WorkspaceEdit`` is declared here as the part of LSP's
``WorkspaceEdit`` the daemon sends (``documentChanges`` of versioned text edits, file
creations and deletions), field for field as LSP defines it, for the schema and the clients'
generated types; the edits themselves are built with lsprotocol (:mod:`.editor_files`), and
every frame the tests see is checked against that schema.
"""

from __future__ import annotations

from typing import Any, Literal, Union

import attrs

from ..converter import converter

from ..events import ChangedFile, ChangedHunk
from .initialize_types import FsCapabilities  # re-exported: initialize negotiates it

__all__ = [
    "FsCapabilities",
    "Position",
    "Range",
    "ContextItem",
    "DidChangeDirtyParams",
    "ReadTextFileParams",
    "ReadTextFileResult",
    "SaveFilesParams",
    "SaveFailure",
    "SaveFilesResult",
    "TextEdit",
    "OptionalVersionedTextDocumentIdentifier",
    "TextDocumentEdit",
    "CreateFileOptions",
    "CreateFile",
    "DeleteFile",
    "WorkspaceEdit",
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
class SaveFilesParams:
    session_id: str
    paths: list[str]


@attrs.define
class SaveFailure:
    path: str
    reason: str


@attrs.define
class SaveFilesResult:
    saved: list[str] = attrs.field(factory=list)
    failed: list[SaveFailure] = attrs.field(factory=list)


@attrs.define
class TextEdit:
    range: Range
    new_text: str


@attrs.define
class OptionalVersionedTextDocumentIdentifier:
    uri: str
    version: int | None  # null: the file is not open in the editor (its disk content is the base)


@attrs.define
class TextDocumentEdit:
    text_document: OptionalVersionedTextDocumentIdentifier
    edits: list[TextEdit]


@attrs.define
class CreateFileOptions:
    overwrite: bool | None = None
    ignore_if_exists: bool | None = None


@attrs.define
class CreateFile:
    uri: str
    kind: Literal["create"] = "create"
    options: CreateFileOptions | None = None


@attrs.define
class DeleteFile:
    uri: str
    kind: Literal["delete"] = "delete"


DocumentChange = Union[TextDocumentEdit, CreateFile, DeleteFile]


def _structure_change(obj: Any, _type: Any) -> Any:
    """A file operation by its ``kind``; a text edit has none (LSP's own rule)."""
    kind = obj.get("kind") if isinstance(obj, dict) else None
    if kind is None:
        return converter.structure(obj, TextDocumentEdit)
    cls = {"create": CreateFile, "delete": DeleteFile}.get(kind)
    if cls is None:
        raise ValueError(f"unknown document change kind {kind!r}")
    return converter.structure(obj, cls)


converter.register_structure_hook(DocumentChange, _structure_change)


@attrs.define
class WorkspaceEdit:
    """LSP's ``WorkspaceEdit``, as much of it as the daemon sends."""

    document_changes: list[DocumentChange]


@attrs.define
class ApplyWorkspaceEditParams:
    label: str
    edit: WorkspaceEdit


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
