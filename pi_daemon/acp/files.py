"""The editor side of the file-access seam: ``fs/read_text_file`` and ``fs/write_text_file``.

Every path is first confined exactly as for the disk (:mod:`pi_daemon.guard.workspace`:
roots, ``.pi/``, symlinks, hard links); only then is the editor asked, with the
resolved absolute path. Reads come from the editor's buffer (unsaved changes
included) for text; binary files (images) are read from the disk, which is where the
editor would read them too. A ``read`` of a window asks for only those lines (ACP's
``line`` / ``limit``) when the editor's lines are the tool's (LF or CRLF line ends); edits
match against the whole file. Writes go through the editor so they land in its buffers
and undo history. A file the editor is asked to create must not exist on disk yet,
and its folder must be inside the roots (a file in a new folder is created on the disk).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

from ..tools.file_access import DiskFiles, lines_as_editors_count, looks_binary
from ..guard.workspace import EDIT, LIST, READ, WRITE, Workspace
from ..wire.peer import ClientError, Peer

FS_TIMEOUT_S = 60.0


class EditorFiles(DiskFiles):
    def __init__(self, workspace: Workspace, peer: Peer, session_id: str, *, read: bool, write: bool) -> None:
        super().__init__(workspace)
        self.peer = peer
        self.session_id = session_id
        self.via_read = read
        self.via_write = write

    async def _ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            result = await self.peer.request(method, {"sessionId": self.session_id, **params}, timeout=FS_TIMEOUT_S)
        except ClientError as exc:
            raise OSError(errno.EIO, f"the editor refused {method}: {exc}") from None
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT, f"the editor did not answer {method} within {FS_TIMEOUT_S:g} s") from None
        return result if isinstance(result, dict) else {}

    async def _text(self, target: Path, **window: int) -> str:
        result = await self._ask("fs/read_text_file", {"path": str(target), **window})
        content = result.get("content")
        if not isinstance(content, str):
            raise OSError(errno.EIO, "the editor's fs/read_text_file answer has no content string")
        return content

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        data, target = await super().read(path, purpose)  # confined, and the disk's bytes
        if not self.via_read or looks_binary(data):
            return data, target
        return (await self._text(target)).encode("utf-8"), target

    async def read_lines(self, path: str, line: int, limit: int) -> tuple[bytes, Path, bool]:
        data, target = await super().read(path, READ)  # confined, and the disk's bytes
        if not self.via_read or looks_binary(data):
            return data, target, False
        if lines_as_editors_count(data):
            window = (await self._text(target, line=line, limit=limit)).encode("utf-8")
            # Taken only when it is the saved file's window: clients answer a window with the whole
            # file, or with a line too many, and the tool would label the wrong lines. Otherwise (an
            # unsaved buffer, or such an answer) the whole text is asked for and cut by the tool.
            if window == b"".join(data.splitlines(keepends=True)[line - 1:line - 1 + limit]):
                return window, target, True
        return (await self._text(target)).encode("utf-8"), target, False

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        if not self.via_write:
            return await super().write(path, data, purpose)
        place = self.workspace.locate(path, purpose)
        existed = os.path.lexists(place.path)
        if existed or purpose != WRITE:
            with self.workspace.open_file(path, EDIT) as file:  # the same checks as a disk edit
                place = file.place
        else:
            folder = os.path.dirname(place.path)
            if not os.path.isdir(folder):  # new folders are made on the disk, with the file
                return await super().write(path, data, purpose)
            self.workspace.check(folder, LIST)  # its folder: inside the roots, no symlink on the way
        before: bytes | None = None
        if existed and self.changes is not None:  # for the turn diff: what the editor held before
            before = (await self.read(str(place.path), READ))[0]
        await self._ask("fs/write_text_file", {"path": str(place.path), "content": data.decode("utf-8")})
        self.note_write(place.path, lambda: before, data)
        return existed, place.path
