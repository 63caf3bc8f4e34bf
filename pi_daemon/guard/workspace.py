"""The boundary around the workspace: every path a tool touches is resolved and opened here.

A path is taken relative to the workspace (absolute paths are allowed only when they
land inside it). It is resolved with symlinks followed, and refused when the result is
outside the workspace and outside the extra roots the user allowed. It is then opened
from a descriptor of its root without following any symlink (``safe_open``), so a
folder swapped for a symlink after the check cannot send the open elsewhere.

Beyond that, a regular file with more than one hard link is refused unless each of its
names is found beneath the same root (:mod:`.hard_links`: another name may be outside), and ``<workspace>/.pi/`` — the daemon's own state: settings,
permissions, models, sessions — is never written; of it only ``.pi/tmp/`` (where long
command output is saved) is read. Writes to one file are serialised, so parallel tool
calls cannot interleave them.

Every root is handed to :func:`.programs.keep_out` as it is added: commands may write there,
so no program the daemon runs itself is taken from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import Iterator, Sequence

import attrs

from . import programs
from .hard_links import all_names_within
from .repositories import in_git_folder
from .safe_open import open_beneath, open_root

READ, WRITE, EDIT, LIST = "read", "write", "edit", "list"
"""What a path is wanted for: the state folder and file checks depend on it."""

STATE_DIR = ".pi"
READABLE_STATE = ("tmp",)  # the one part of .pi/ the agent is meant to read: its saved command output
O_PATH = getattr(os, "O_PATH", os.O_RDONLY | os.O_NONBLOCK)


class PathRefused(Exception):
    """A path outside the allowed roots, or otherwise unusable; the text says why."""


@attrs.frozen
class Place:
    """A checked path: its resolved form, the root it is beneath and its components below it."""
    path: Path
    root: Path
    parts: tuple[str, ...]


def _within(path: str, folder: str, *, exact_case: bool = False) -> bool:
    """``path`` is ``folder`` or beneath it (both absolute and resolved). Names are compared
    without case unless ``exact_case``: a case-insensitive disk opens ``.PI`` as ``.pi``."""
    if not exact_case:
        path, folder = path.casefold(), folder.casefold()
    return path == folder or path.startswith(folder if folder.endswith(os.sep) else folder + os.sep)


class Workspace:
    def __init__(self, root: str, extra_roots: list[str] | None = None) -> None:
        self.root = Path(root).resolve()
        self.cwd = self.root  # where relative paths start: a session's working folder
        self.extra_roots = [Path(r).resolve() for r in (extra_roots or [])]
        self.session_roots: list[Path] = []  # a view's own (ACP's additionalDirectories)
        self._locks: dict[Path, asyncio.Lock] = {}
        programs.keep_out([self.root, *self.extra_roots])

    def at(self, cwd: str, session_roots: Sequence[str] = ()) -> "Workspace":
        """The same boundary (roots, locks, later ``allow``s) with relative paths taken from ``cwd``,
        widened by ``session_roots`` for this view alone.

        ``cwd`` must resolve to a folder inside the roots; raises PathRefused saying why not."""
        resolved = Path(self._resolve(cwd)[0])
        if not resolved.is_dir():
            raise PathRefused(f"{cwd!r} is not a folder")
        view = Workspace.__new__(Workspace)
        view.root, view.cwd, view.extra_roots, view._locks = self.root, resolved, self.extra_roots, self._locks
        view.session_roots = []
        view.set_session_roots(session_roots)
        return view

    def set_session_roots(self, folders: Sequence[str]) -> None:
        """This view's own extra roots, replacing the ones it had; each must be an existing folder."""
        roots = []
        for folder in folders:
            resolved = Path(os.path.expanduser(folder)).resolve()
            if not resolved.is_dir():
                raise PathRefused(f"{folder!r} is not a folder")
            if resolved not in roots:
                roots.append(resolved)
        programs.keep_out(roots)
        self.session_roots[:] = roots

    def allow(self, roots: list[str]) -> None:
        """Let tools reach these folders too (settings, or the client's ``allowedRoots``)."""
        for root in roots:
            resolved = Path(os.path.expanduser(root)).resolve()
            if resolved not in self.extra_roots:
                programs.keep_out([resolved])
                self.extra_roots.append(resolved)

    @property
    def roots(self) -> list[Path]:
        return [self.root, *self.extra_roots, *(r for r in self.session_roots if r not in self.extra_roots)]

    def resolve(self, path: str | None) -> Path:
        return Path(self._resolve(path)[0])

    def _resolve(self, path: str | None) -> tuple[str, Path]:
        """``path`` with symlinks followed (as text), and the most specific root it is beneath."""
        if path is None or path == "":
            path = str(self.cwd)
        if "\x00" in path:
            raise PathRefused("the path contains a NUL byte")
        candidate = os.path.expanduser(path) if path.startswith("~") else path
        candidate = os.path.join(self.cwd, candidate)  # an absolute path stays as it is
        try:
            resolved = os.path.realpath(candidate)
        except OSError:  # a name turned from symlink to folder between lstat and readlink
            try:
                resolved = os.path.realpath(candidate)
            except OSError as exc:
                raise PathRefused(f"{path!r} keeps changing while it is being resolved ({exc.strerror}); "
                                  "try again") from None
        root = None
        for r in self.roots:  # the most specific root that holds it (roots may nest)
            if _within(resolved, str(r), exact_case=True) and (root is None or len(str(r)) > len(str(root))):
                root = r
        if root is None:
            allowed = ", ".join(str(r) for r in self.roots)
            raise PathRefused(
                f"{path!r} resolves to {resolved}, which is outside the workspace (allowed: {allowed}); "
                "use a path inside the workspace"
            )
        return resolved, root

    def locate(self, path: str | None, purpose: str = READ) -> Place:
        """Resolve and check ``path`` for ``purpose``; raises PathRefused saying why not."""
        resolved, root = self._resolve(path)
        self._check_state(path, resolved, purpose)
        below = resolved[len(str(root)):]
        return Place(Path(resolved), root, tuple(p for p in below.split(os.sep) if p))

    def _check_state(self, path: str | None, resolved: str, purpose: str) -> None:
        if purpose == LIST:
            return
        if purpose in (WRITE, EDIT) and in_git_folder(resolved) and not in_git_folder(os.path.join(self.cwd, path or "")):
            raise PathRefused(  # the permission asked for the path as named: .git/ needs its own
                f"{path!r} leads into a .git/ folder through a symbolic link; git runs what its configuration "
                "and hooks name, so a write there must name the .git/ path itself (and needs the user's "
                "explicit permission)")
        lexical = os.path.join(self.root, STATE_DIR)
        states = [lexical, os.path.realpath(lexical)] if os.path.islink(lexical) else [lexical]
        for state in states:
            if not _within(resolved, state):
                continue
            if purpose == READ and any(_within(resolved, os.path.join(state, part)) for part in READABLE_STATE):
                return
            what = "read" if purpose == READ else "written"
            raise PathRefused(
                f"{path!r} is in {STATE_DIR}/, the daemon's own state (settings, permissions, models, "
                f"sessions); it cannot be {what} through the tools"
                + (" (only .pi/tmp/, where long command output is saved, can be read)" if purpose == READ else ""))

    def open(self, path: str | None, purpose: str, flags: int, *, make_parents: bool = False) -> tuple[int, Place]:
        """A descriptor of ``path`` opened beneath its root with ``flags``, no symlink followed.

        A symlink met on the way means the path changed after it was resolved: it is
        resolved and opened once more, then refused."""
        for attempt in (1, 2):
            place = self.locate(path, purpose)
            root_fd = open_root(place.root)
            try:
                return open_beneath(root_fd, place.parts, flags, make_parents=make_parents), place
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise
                if attempt == 2:
                    raise PathRefused(
                        f"{path!r} leads through a symbolic link that does not resolve (a loop), or it changed "
                        "while it was being opened (a folder on the way became a symbolic link); it was not "
                        "followed") from None
            finally:
                os.close(root_fd)
        raise AssertionError("unreachable")

    def check(self, path: str | None, purpose: str = READ) -> Place:
        """``path`` is inside the roots now, reached without a symlink on the way."""
        fd, place = self.open(path, purpose, O_PATH)
        os.close(fd)
        return place

    @contextlib.contextmanager
    def open_file(self, path: str, purpose: str) -> Iterator[ConfinedFile]:
        """An existing (or, for WRITE, possibly new) regular file with one link, opened for ``purpose``."""
        shown = path
        try:
            if purpose == WRITE:
                fd, place, existed = self._open_for_write(path)
            else:
                fd, place = self.open(path, purpose, os.O_RDWR | os.O_NONBLOCK if purpose == EDIT
                                      else os.O_RDONLY | os.O_NONBLOCK)
                existed = True
        except FileNotFoundError:
            raise PathRefused(f"{shown!r} does not exist") from None
        except IsADirectoryError:
            raise PathRefused(f"{shown!r} is a directory" + (": use ls to list it" if purpose == READ else "")) from None
        try:
            st = os.fstat(fd)
            _single_regular_file(shown, st, place, fd)
            self._still_named(shown, place, st, fd)
            yield ConfinedFile(fd, place, existed)
        finally:
            os.close(fd)

    def _still_named(self, shown: str, place: Place, st: os.stat_result, fd: int) -> None:
        """The opened file still has its one name at ``place``. Else a hard link to an outside
        file was opened and the inside name removed before the link count was read.

        The kernel's name for the opened entry (``/proc/self/fd``) settles it: the link count
        was read first, so if the entry we opened is still linked at ``place`` now, it was
        the file's only name then. Comparing inodes by reopening the name cannot: the
        outside file may be linked in again meanwhile.

        One window remains inside the kernel: a rename over the name lowers the file's link
        count before it unlinks the old entry, both under the folder's lock. So the name is
        read only after :func:`_settle` has waited for that lock."""
        _settle(place)
        try:
            name = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            name = None  # no /proc: fall back to reopening the name
        if name is not None:
            if name == os.path.join(str(place.root), *place.parts):
                return
            raise PathRefused(f"{shown!r} changed while it was being opened (the opened file is no longer "
                              "at that name); it was not used")
        root_fd = open_root(place.root)
        try:
            again = open_beneath(root_fd, place.parts, O_PATH)
        except OSError:
            again = None
        finally:
            os.close(root_fd)
        if again is not None:
            try:
                now = os.fstat(again)
            finally:
                os.close(again)
            if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                _single_regular_file(shown, now, place, fd)
                return
        raise PathRefused(f"{shown!r} changed while it was being opened (its name now leads to another file "
                          "or to none); it was not used")

    def _open_for_write(self, path: str) -> tuple[int, Place, bool]:
        # Opened without O_TRUNC: a file is emptied only after it passed the checks.
        for _ in range(3):
            try:
                fd, place = self.open(path, WRITE, os.O_WRONLY | os.O_NONBLOCK)
                return fd, place, True
            except FileNotFoundError:
                pass
            try:
                fd, place = self.open(path, WRITE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, make_parents=True)
                return fd, place, False
            except FileExistsError:
                continue  # created meanwhile: open it as an existing file
        raise PathRefused(f"{path!r} keeps appearing and disappearing while it is being written; try again")

    @contextlib.contextmanager
    def open_folder(self, path: str | None) -> Iterator[tuple[int, Place]]:
        try:
            fd, place = self.open(path, LIST, os.O_RDONLY | os.O_DIRECTORY)
        except NotADirectoryError:
            raise PathRefused(f"{path!r} is a file, not a folder") from None
        try:
            yield fd, place
        finally:
            os.close(fd)

    def show(self, path: Path) -> str:
        """A path as the model should see it: relative to the working folder when inside it."""
        try:
            return str(path.relative_to(self.cwd)) or "."
        except ValueError:
            return str(path)

    def lock(self, path: Path) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())


def _settle(place: Place) -> None:
    """Wait until no rename, link or unlink is under way in ``place``'s folder.

    Looking up a name the kernel has never seen takes the folder's lock, which those
    operations hold from start to end; a fresh random name is never in the cache."""
    root_fd = open_root(place.root)
    try:
        folder = open_beneath(root_fd, place.parts[:-1], O_PATH | os.O_DIRECTORY)
    except OSError:
        return  # the folder itself is gone or swapped: the name check that follows refuses
    finally:
        os.close(root_fd)
    try:
        os.stat(f".pi-settle-{os.urandom(8).hex()}", dir_fd=folder, follow_symlinks=False)
    except OSError:
        pass
    finally:
        os.close(folder)


def _single_regular_file(shown: str, st: os.stat_result, place: Place, fd: int) -> None:
    """A regular file whose names are all beneath ``place``'s root (one, or each link found there)."""
    if stat.S_ISDIR(st.st_mode):
        raise PathRefused(f"{shown!r} is a directory: use ls to list it")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{shown!r} is not a regular file (a device, socket or pipe); it cannot be opened")
    if st.st_nlink > 1 and not all_names_within(place.root, fd):
        raise PathRefused(f"{shown} has {st.st_nlink} hard links; refusing since it may be a file outside the "
                          "workspace: not all of its names were found inside it (copy it to a new file to work "
                          "on it)")


@attrs.define
class ConfinedFile:
    """An open file of the workspace: read it whole, or replace its content in place."""
    fd: int
    place: Place
    existed: bool

    def read(self, limit: int | None = None) -> bytes:
        """The content, or its first ``limit`` bytes (a file that grows as it is read ends there)."""
        chunks = []
        left = -1 if limit is None else limit  # -1: no limit
        os.lseek(self.fd, 0, os.SEEK_SET)
        while left and (chunk := os.read(self.fd, 1 << 20 if left < 0 else min(left, 1 << 20))):
            chunks.append(chunk)
            left = left - len(chunk) if left > 0 else left
        return b"".join(chunks)

    def lines(self) -> Iterator[bytes]:
        """The file's lines (with their ends), read as they are needed."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        with os.fdopen(os.dup(self.fd), "rb") as f:
            yield from f

    def replace(self, data: bytes) -> None:
        """The file's whole content becomes ``data`` (same inode: mode and owner are kept)."""
        view, offset = memoryview(data), 0
        while offset < len(view):
            offset += os.pwrite(self.fd, view[offset:], offset)
        os.ftruncate(self.fd, len(data))
