"""File access is a seam: the file tools read and write through a :class:`FileAccess`.

The tools never open files themselves. They ask a file-access object, which checks the
path against the workspace's confinement (:mod:`pi_daemon.guard.workspace`: roots, the daemon's state
folder, symlinks, hard links) and then reads or writes. :class:`DiskFiles` reads and
writes the disk; a protocol face can hand the tools another implementation that reads
through the editor (unsaved buffers) and writes through it (edits land in the editor),
after the same checks. The native face uses the disk today; the ACP face uses the
editor when the client offers ``fs/read_text_file`` / ``fs/write_text_file``.

Every write goes past :meth:`FileAccess.note_write`, which tells the session's change
log (``changes``, when one is set) the file's content before and after: that is where
the turn diff records what ``write`` and ``edit`` did, exactly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Callable

from ..guard.workspace import EDIT, READ, WRITE, Workspace


class FileAccess:
    """Reads and writes of workspace files; every path is confined before it is used.

    ``read`` returns the file's bytes and its resolved path; ``write`` replaces (or, for
    ``WRITE``, creates) a file and returns whether it existed before. Both raise
    :class:`.workspace.PathRefused` with a reason the model can act on, or ``OSError``.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        # the session's change log: ``record(path, before, after)``, contents as bytes or None (absent)
        self.changes: Any = None

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        raise NotImplementedError

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        raise NotImplementedError

    async def read_lines(self, path: str, line: int, limit: int) -> tuple[bytes, Path, bool]:
        """The file for a reader that wants lines ``line`` (1-based) to ``line + limit - 1``:
        (bytes, resolved path, whether the bytes are only those lines). The disk gives the whole
        file (the reader pages it, and can count its lines); an editor may give the window."""
        data, target = await self.read(path, READ)
        return data, target, False

    async def current(self, path: str) -> tuple[bytes | None, Path]:
        """The file as the user sees it now (None: it does not exist), for review and revert."""
        place = self.workspace.locate(path, READ)
        if not os.path.lexists(place.path):
            return None, place.path
        return await self.read(path, READ)

    async def delete(self, path: str) -> Path:
        """Remove a file (reverting a file a run created)."""
        raise NotImplementedError

    async def modified_buffers(self, under: Path) -> dict[str, str]:
        """Files under ``under`` that the editor holds with unsaved changes: shown path -> text.
        The disk has none."""
        return {}

    def unsaved(self) -> list[str]:
        """Workspace files the editor holds with unsaved changes (shown paths): a command reads
        the disk, so it sees them as last saved. The disk has none."""
        return []

    async def save_edits(self) -> tuple[list[str], list[str]]:
        """Have the editor save the files the agent changed in it, before a command reads the disk:
        ``(saved, failed)`` as shown paths (a failure with its reason). The disk has nothing to save."""
        return [], []

    def note_write(self, target: Path, before: Callable[[], bytes | None], after: bytes | None) -> None:
        """Tell the change log; ``before`` is only called when the log needs it."""
        if self.changes is not None:
            self.changes.record(target, before, after)


class DiskFiles(FileAccess):
    """The disk, opened beneath the workspace's roots (see :meth:`Workspace.open_file`)."""

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        with self.workspace.open_file(path, purpose) as file:
            return file.read(), file.place.path

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        if self.changes is not None:
            before = self._disk_before(path)
        with self.workspace.open_file(path, WRITE if purpose == WRITE else EDIT) as file:
            file.replace(data)
            if self.changes is not None:
                self.note_write(file.place.path, lambda: before, data)
            return file.existed, file.place.path

    def _disk_before(self, path: str) -> bytes | None:
        if not os.path.lexists(self.workspace.locate(path, WRITE).path):
            return None
        with self.workspace.open_file(path, READ) as file:
            return file.read()

    async def delete(self, path: str) -> Path:
        with self.workspace.open_file(path, EDIT) as file:
            target, before = file.place.path, file.read()
            os.unlink(target)
        self.note_write(target, lambda: before, None)
        return target


def looks_binary(data: bytes) -> bool:
    """Content no editor buffer holds as text (a NUL near the start)."""
    return b"\x00" in data[:8192]


# What ``str.splitlines`` ends a line at besides LF and CRLF, in UTF-8: VT, FF, FS, GS, RS,
# NEL, LS, PS and a lone CR. Editors do not agree with it (nor with each other) on these.
_OTHER_LINE_ENDS = re.compile(rb"[\x0b\x0c\x1c-\x1e]|\xc2\x85|\xe2\x80[\xa8\xa9]|\r(?!\n)")


def lines_as_editors_count(data: bytes) -> bool:
    """Whether ``data`` ends its lines only with LF or CRLF, where every editor ends them too.

    Only then is a window an editor gives (its lines ``line`` to ``line + limit - 1``) the
    same lines that the ``read`` tool numbers (``str.splitlines``) in the whole file."""
    return _OTHER_LINE_ENDS.search(data) is None
