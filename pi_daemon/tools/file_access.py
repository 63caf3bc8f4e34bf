"""File access is a seam: the file tools read and write through a :class:`FileAccess`.

The tools never open files themselves. They ask a file-access object, which checks the
path against the workspace's confinement (:mod:`.workspace`: roots, the daemon's state
folder, symlinks, hard links) and then reads or writes. :class:`DiskFiles` reads and
writes the disk; a protocol face can hand the tools another implementation that reads
through the editor (unsaved buffers) and writes through it (edits land in the editor),
after the same checks. The native face uses the disk today; the ACP face uses the
editor when the client offers ``fs/read_text_file`` / ``fs/write_text_file``.
"""

from __future__ import annotations

from pathlib import Path

from .workspace import EDIT, READ, WRITE, Workspace


class FileAccess:
    """Reads and writes of workspace files; every path is confined before it is used.

    ``read`` returns the file's bytes and its resolved path; ``write`` replaces (or, for
    ``WRITE``, creates) a file and returns whether it existed before. Both raise
    :class:`.workspace.PathRefused` with a reason the model can act on, or ``OSError``.
    """

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        raise NotImplementedError

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        raise NotImplementedError


class DiskFiles(FileAccess):
    """The disk, opened beneath the workspace's roots (see :meth:`Workspace.open_file`)."""

    async def read(self, path: str, purpose: str = READ) -> tuple[bytes, Path]:
        with self.workspace.open_file(path, purpose) as file:
            return file.read(), file.place.path

    async def write(self, path: str, data: bytes, purpose: str = WRITE) -> tuple[bool, Path]:
        with self.workspace.open_file(path, WRITE if purpose == WRITE else EDIT) as file:
            file.replace(data)
            return file.existed, file.place.path


def looks_binary(data: bytes) -> bool:
    """Content no editor buffer holds as text (a NUL near the start)."""
    return b"\x00" in data[:8192]
