"""The native face's editor file system: ``fs/readTextFile`` and ``workspace/applyEdit``.

When the client declared ``capabilities.fs`` in ``initialize``, the session's file tools
reach files through :class:`EditorFiles` (with several clients, the session's editor is the one
that last prompted in it; with none, files are the disk's). Every path is confined first, exactly as for
the disk (:mod:`..tools.workspace`); only then is the editor asked, with the resolved
absolute path.

* Reading (``readTextFile``): the editor answers with the buffer's text and its version,
  or ``content: null`` when it does not have the file open (the disk is read then).
  Binary files are read from the disk. A ``read`` of a window asks for only those lines
  when the file ends its lines as editors do (LF or CRLF), so the editor's lines are the tool's.
* ``grep`` searches the buffers the client listed in its last ``fs/didChangeDirty``
  notification (open with unsaved changes) instead of their files on the disk, and a
  ``bash`` result names them (the command saw them as last saved). A file the daemon has
  just edited through the editor counts as unsaved until the client's next notification.
* Writing (``applyEdit``): a ``WorkspaceEdit`` built with lsprotocol's classes and converter
  (LSP's own vocabulary, loaded in a thread with the first edit; :mod:`.editor_types` declares the part
  of it the daemon sends, for the schema and the clients' types). An existing
  file gets one ``TextDocumentEdit`` whose ``TextEdit``\\ s turn the text the tool last
  read into the new text, versioned with the version the editor reported with that text
  (so an editor refuses it if the buffer changed since); a new file gets ``CreateFile``
  plus a ``TextDocumentEdit`` inserting its content. A refusal fails the tool with the
  editor's ``failureReason``; nothing is written. A new file in a folder that does not
  exist yet is written to the disk, with its folders.
"""

from __future__ import annotations

import difflib
import errno
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from ..converter import to_wire
from ..tools.file_access import DiskFiles, lines_as_editors_count, looks_binary
from ..guard.workspace import EDIT, LIST, READ, WRITE, PathRefused, Workspace
from . import lsp
from .initialize import ClientState
from .types import APPLY_EDIT, READ_TEXT_FILE, SAVE_FILES, ReadTextFileParams, SaveFilesParams

if TYPE_CHECKING:
    from lsprotocol.types import TextEdit, WorkspaceEdit

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]  # (method, params) -> result; raises OSError


def _end(lines: list[str]) -> tuple[int, int]:
    """The position after the last character (LSP counts characters in UTF-16 code units)."""
    if not lines:
        return 0, 0
    last = lines[-1]
    if last.endswith(("\n", "\r")):
        return len(lines), 0
    return len(lines) - 1, len(last.encode("utf-16-le")) // 2


def text_edits(old: str, new: str) -> list[TextEdit]:
    """``TextEdit``\\ s, whole lines each, that turn ``old`` into ``new``."""
    from lsprotocol.types import Position, Range, TextEdit

    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)

    def at(n: int) -> Position:
        line, character = (n, 0) if n < len(a) else _end(a)
        return Position(line=line, character=character)

    ops = difflib.SequenceMatcher(None, [x.rstrip("\r\n") + "\n" for x in a],
                                  [x.rstrip("\r\n") + "\n" for x in b], autojunk=False).get_opcodes()
    edits = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            continue
        edits.append(TextEdit(range=Range(start=at(i1), end=at(i2)), new_text="".join(b[j1:j2])))
    # An unchanged last line that only gains or loses its line end.
    if not edits and old != new:
        edits.append(TextEdit(range=Range(start=at(0), end=at(len(a))), new_text=new))
    return edits


class EditorFiles(DiskFiles):
    def __init__(self, workspace: Workspace, ask: Ask, session_id: str, editor: Callable[[], ClientState]) -> None:
        super().__init__(workspace)
        self.ask = ask
        self.session_id = session_id
        self.editor = editor  # the declarations of the client that is the session's editor now
        self.seen: dict[str, tuple[str, int | None]] = {}  # path -> (text, version) the last read gave
        self.edited: set[str] = set()  # paths changed through applyEdit and not yet saved through fs/save

    @property
    def client(self) -> ClientState:
        return self.editor()

    async def _buffer(self, target: Path, line: int | None = None,
                      limit: int | None = None) -> tuple[str | None, int | None]:
        if not self.client.fs_read:
            return None, None
        result = await self.ask(READ_TEXT_FILE.name, to_wire(ReadTextFileParams(
            session_id=self.session_id, path=str(target), line=line, limit=limit)))
        if not isinstance(result, dict) or not isinstance(result.get("content"), (str, type(None))):
            raise OSError(errno.EIO, "the editor's fs/readTextFile answer has no content string or null")
        version = result.get("version")
        return result.get("content"), version if type(version) is int else None

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        data, target = await super().read(path, purpose)  # confined, and the disk's bytes
        if looks_binary(data) or not (self.client.fs_read or self.client.fs_apply_edit):
            return data, target
        content, version = await self._buffer(target)
        if content is None:
            self.seen[str(target)] = (data.decode("utf-8", "replace"), None)
            return data, target
        self.seen[str(target)] = (content, version)
        return content.encode("utf-8"), target

    async def read_lines(self, path: str, line: int, limit: int) -> tuple[bytes, Path, bool]:
        data, target = await super().read(path, READ)  # confined, and the disk's bytes
        if looks_binary(data) or not self.client.fs_read:
            return data, target, False
        if not lines_as_editors_count(data):
            return (*await self.read(path, READ), False)
        content, _ = await self._buffer(target, line, limit)  # a window is not an edit's base: not kept
        if content is None:
            return data, target, False
        window = content.encode("utf-8")
        if not lines_as_editors_count(window):
            return (*await self.read(path, READ), False)
        return window, target, True

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        if not self.client.fs_apply_edit:
            return await super().write(path, data, purpose)
        await lsp.loaded()  # before anything is read: the edit is built from what is read next
        place = self.workspace.locate(path, purpose)
        existed = os.path.lexists(place.path)
        new = data.decode("utf-8")
        if existed or purpose != WRITE:
            with self.workspace.open_file(path, EDIT) as file:  # the same checks as a disk edit
                target, disk = file.place.path, file.read()
            base = self.seen.pop(str(target), None) if purpose == EDIT else None
            if base is None:
                content, version = await self._buffer(target)
                base = (disk.decode("utf-8", "replace") if content is None else content, version)
            uri = target.as_uri()
            L = lsp.types()
            edit = L.WorkspaceEdit(document_changes=[L.TextDocumentEdit(
                text_document=L.OptionalVersionedTextDocumentIdentifier(uri=uri, version=base[1]),
                edits=text_edits(base[0], new))])
            before: bytes | None = base[0].encode("utf-8")
        else:
            folder = os.path.dirname(place.path)
            if not os.path.isdir(folder):  # new folders are made on the disk, with the file
                return await super().write(path, data, purpose)
            self.workspace.check(folder, LIST)  # its folder: inside the roots, no symlink on the way
            target, uri = place.path, place.path.as_uri()
            L = lsp.types()
            edit = L.WorkspaceEdit(document_changes=[
                L.CreateFile(uri=uri, options=L.CreateFileOptions(overwrite=False, ignore_if_exists=False)),
                L.TextDocumentEdit(text_document=L.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                                 edits=text_edits("", new)),
            ])
            before = None
        await self._apply(f"pi: {'edit' if existed else 'create'} {self.workspace.show(target)}", edit, target)
        self.note_write(target, lambda: before, data)
        return existed, target

    async def delete(self, path: str) -> Path:
        if not self.client.fs_apply_edit:
            return await super().delete(path)
        await lsp.loaded()
        with self.workspace.open_file(path, EDIT) as file:
            target, before = file.place.path, file.read()
        L = lsp.types()
        edit = L.WorkspaceEdit(document_changes=[L.DeleteFile(uri=target.as_uri())])
        await self._apply(f"pi: delete {self.workspace.show(target)}", edit, target, unsaved=False)
        self.note_write(target, lambda: before, None)
        return target

    async def modified_buffers(self, under: Path) -> dict[str, str]:
        if not self.client.fs_read:
            return {}
        found = {}
        for path in list(self.client.dirty_buffers):
            if not (Path(path) == under or under in Path(path).parents):
                continue
            try:
                data, target = await self.read(path, READ)  # confined as any read, then asked
            except (PathRefused, OSError):
                continue
            if not looks_binary(data):
                found[self.workspace.show(target)] = data.decode("utf-8", "replace")
        return found

    def unsaved(self) -> list[str]:
        shown = []
        for path in list(self.client.dirty_buffers):
            try:
                shown.append(self.workspace.show(self.workspace.locate(path, READ).path))
            except PathRefused:
                continue
        return sorted(set(shown))

    async def _apply(self, label: str, edit: WorkspaceEdit, target: Path, unsaved: bool = True) -> None:
        params = lsp.converter().unstructure(lsp.types().ApplyWorkspaceEditParams(edit=edit, label=label))
        result = await self.ask(APPLY_EDIT.name, params)
        if not isinstance(result, dict) or not isinstance(result.get("applied"), bool):
            raise OSError(errno.EIO, "the editor's workspace/applyEdit answer has no applied flag")
        if not result["applied"]:
            reason = result.get("failureReason") or "no reason given"
            raise OSError(errno.EPERM, f"the editor did not apply the edit to {self.workspace.show(target)} "
                                       f"({reason}); nothing was written")
        # Unsaved now: a command run before the client's next fs/didChangeDirty must know it too.
        if unsaved and str(target) not in self.client.dirty_buffers:
            self.client.dirty_buffers.append(str(target))
        elif not unsaved and str(target) in self.client.dirty_buffers:
            self.client.dirty_buffers.remove(str(target))
        if unsaved:
            self.edited.add(str(target))
        else:
            self.edited.discard(str(target))

    async def save_edits(self) -> tuple[list[str], list[str]]:
        if not self.client.fs_save or not self.edited:
            return [], []
        paths = sorted(self.edited)
        saved: list[str] = []
        try:
            answer = await self.ask(SAVE_FILES.name, to_wire(SaveFilesParams(session_id=self.session_id, paths=paths)))
            if not (isinstance(answer, dict) and isinstance(answer.get("saved", []), list)
                    and isinstance(answer.get("failed", []), list)):
                raise OSError(errno.EIO, "the editor's fs/save answer has no saved and failed lists")
            saved = [p for p in answer.get("saved", []) if isinstance(p, str)]
            failed = {f["path"]: str(f.get("reason") or "no reason given") for f in answer.get("failed", [])
                      if isinstance(f, dict) and isinstance(f.get("path"), str)}
        except OSError as exc:  # no answer, an error reply, or an answer of another shape
            failed = {p: exc.strerror or str(exc) for p in paths}
        for path in paths:
            if path not in failed:  # saved now, or not unsaved in the editor any more
                self.edited.discard(path)
                if path in self.client.dirty_buffers:
                    self.client.dirty_buffers.remove(path)
        shown = self.workspace.show
        return ([shown(Path(p)) for p in paths if p in saved],
                [f"{shown(Path(p))} ({reason})" for p, reason in sorted(failed.items()) if p in paths])
