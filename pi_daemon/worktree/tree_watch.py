"""What changed beneath a folder, from the kernel's file events (inotify), without reading the tree.

A :class:`TreeWatch` watches every folder beneath its root (a watch per folder: inotify is
not recursive), adding watches for folders as they are created or moved in. Each
:class:`Marks` (one per reader) collects the names touched since it was last taken: files,
whole subtrees (a folder created, deleted or moved: what it held is not listed one by one)
or everything (the kernel's queue overflowed, the root itself went away, a ``.gitignore``
changed so the folders left unwatched may matter now).

Not watched: ``.git`` (a file or folder) anywhere, a folder holding one (another repository:
a submodule or a nested clone), the daemon's ``.pi`` at the root, and the folders the caller
says are ignored. Symlinks are never followed. Events are drained by a thread as they come
(so the queue does not overflow while the daemon is idle) and by :meth:`flush`, which a
reader calls once the command it measures has ended: the kernel queued that command's events
when it wrote, so a flush then sees all of them.

A writer the kernel does not report to a folder watch is not seen: a write through a hard
link from outside the tree, a change through a memory mapping, a network file system's
other clients.
"""

from __future__ import annotations

import errno
import logging
import os
import select
import threading
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from inotify_simple import INotify, flags

from ..guard.safe_open import open_root
from ..guard.tree_walk import GIT, Skipped, walk_levels
from .watch_budget import budget, total

log = logging.getLogger(__name__)

EVENTS = (flags.CREATE | flags.DELETE | flags.MODIFY | flags.ATTRIB | flags.CLOSE_WRITE | flags.MOVED_FROM
          | flags.MOVED_TO | flags.DELETE_SELF | flags.MOVE_SELF)
WATCH = EVENTS | flags.ONLYDIR | flags.EXCL_UNLINK  # added through /proc/self/fd: that link is followed
BLOCK = 256  # watches asked of the shared budget at a time while walking
IGNORE_FILES = {".gitignore"}


MAX_NAMES = 50_000  # a reader holding more names than this sees "everything" instead


class Marks:
    """Names (relative to the watch's root, ``/``-separated) touched since the last :meth:`take`."""

    def __init__(self) -> None:
        self.files: set[str] = set()
        self.trees: set[str] = set()
        self.everything = False

    def take(self) -> tuple[set[str], set[str], bool]:
        got = (self.files, self.trees, self.everything)
        self.files, self.trees, self.everything = set(), set(), False
        return got

    def __bool__(self) -> bool:
        return bool(self.files or self.trees or self.everything)


Ask = Callable[[list[str]], set[str]]  # which of these folders (relative names) are not to be watched


class TreeWatch:
    """Watches ``root``; ``asking()`` gives, for one new subtree's walk, an :data:`Ask` for
    which of the given folders (relative names) are not to be watched (asked a level at a
    time). The folders the walks' bounds left out (:mod:`.tree_walk`) are in :attr:`skipped`.

    :attr:`stale` is set when the folders left unwatched may matter now (a ``.gitignore``
    changed) or events were lost: the owner calls :meth:`rewalk`. :attr:`broken` says why the
    watch cannot be trusted at all (the kernel's limit of watches, the root gone)."""

    def __init__(self, root: str, asking: Callable[[], AbstractContextManager[Ask]], skip: Iterable[str] = ()) -> None:
        self.root = root
        self.asking = asking
        self.skipped = Skipped()
        self.skip = set(skip)  # relative names of folders never watched (the daemon's own)
        self.lock = threading.RLock()
        self.root_fd = open_root(root)
        self.inotify = INotify(nonblocking=True)
        self.folders: dict[int, str] = {}  # watch descriptor -> relative folder ("" is the root)
        self.readers: list[Marks] = []
        self.stale = False
        self.broken: str | None = None
        self.granted = 0  # watches this watch holds of the user's budget (:mod:`.watch_budget`)
        # a folder a command may write is not watched (ignored, another repository, past a bound):
        # a hard link made there to a watched file hides the writes through it from the watch
        self.blind = False
        self._stop_r, self._stop_w = os.pipe()
        self._thread: threading.Thread | None = None

    def start(self, skipped: set[str]) -> None:
        """Watch every folder below the root but the ``skipped`` ones (relative names, with
        all below them)."""
        self.rewalk(skipped)
        self._thread = threading.Thread(target=self._drain, name="tree-watch", daemon=True)
        self._thread.start()

    def rewalk(self, skipped: set[str]) -> None:
        """Watch the whole tree again (a folder already watched keeps its watch)."""
        with self.lock:
            self.stale = False
            self._add_tree("", skipped)
            self._give_back()

    def reader(self) -> Marks:
        with self.lock:
            marks = Marks()
            self.readers.append(marks)
            return marks

    def drop(self, marks: Marks) -> None:
        with self.lock:
            if marks in self.readers:
                self.readers.remove(marks)

    def flush(self) -> None:
        """Handle every event the kernel has queued so far."""
        with self.lock:
            if self.broken is not None:
                return
            while True:
                events = list(self.inotify.read(timeout=0))
                if not events:
                    return
                self._handle(events)

    def close(self) -> None:
        os.write(self._stop_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self.lock:
            self.inotify.close()
            budget.release(self.granted)
            self.granted = 0
            os.close(self.root_fd)
            os.close(self._stop_r)
            os.close(self._stop_w)

    # --- the thread that keeps the kernel's queue short ------------------------------

    def _drain(self) -> None:
        poller = select.poll()
        poller.register(self.inotify.fileno(), select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        while True:
            ready = {fd for fd, _ in poller.poll()}
            if self._stop_r in ready:
                return
            try:
                self.flush()
            except (OSError, ValueError) as exc:  # the kernel failed
                self._break(f"reading events failed: {exc}")
            if self.broken is not None:
                return

    # --- events --------------------------------------------------------------------

    def touched(self, names: set[str]) -> None:
        """Files changed in a way no event told (found by comparing stat data): every reader
        counts them as if an event had named them (the next snapshot reads them again)."""
        with self.lock:
            for name in names:
                self._mark("file", name)

    def _mark(self, kind: str, name: str = "") -> None:
        for marks in self.readers:
            if kind == "file":
                marks.files.add(name)
            elif kind == "tree":
                marks.trees.add(name)
            else:
                marks.everything = True
            if len(marks.files) + len(marks.trees) > MAX_NAMES:
                marks.files, marks.trees, marks.everything = set(), set(), True

    def _break(self, why: str) -> None:
        with self.lock:
            if self.broken is None:
                log.info("watching %s: %s; changes are found by reading the whole tree", self.root, why)
            self.broken = why
            self._mark("all")

    def _handle(self, events: list[Any]) -> None:
        made: list[str] = []  # folders created or moved in: watched once the batch is read
        for event in events:
            if event.mask & flags.Q_OVERFLOW:  # events were lost, folders made meanwhile may be unwatched
                self._mark("all")
                self.stale = True
                continue
            if event.mask & flags.IGNORED:
                self.folders.pop(event.wd, None)
                continue
            folder = self.folders.get(event.wd)
            if folder is None:
                continue
            if event.mask & (flags.DELETE_SELF | flags.MOVE_SELF):
                if folder == "":
                    self._break("the watched folder itself was moved or deleted")
                continue
            if not event.name:
                continue
            name = f"{folder}/{event.name}" if folder else event.name
            if event.name == GIT:
                if folder:  # a .git made below the root: that folder is another repository's now
                    self._mark("tree", folder)
                    self._forget(folder, moved=True)
                continue
            if event.mask & flags.ISDIR:
                if event.mask & (flags.DELETE | flags.MOVED_FROM):
                    self._mark("tree", name)
                    self._forget(name, moved=bool(event.mask & flags.MOVED_FROM))
                elif event.mask & (flags.CREATE | flags.MOVED_TO):
                    self._mark("tree", name)  # what it held before its watch was added is found by a walk
                    if name not in self.skip:
                        made.append(name)
                continue
            self._mark("file", name)
            if event.name in IGNORE_FILES:
                self._mark("all")  # a folder left unwatched as ignored may count now
                self.stale = True
        if made:
            with self.asking() as ignored:
                left = ignored(made)
                self.blind = self.blind or bool(left)
                for name in made:
                    if name not in left:
                        self._add_tree(name, set(), ignored)
            self._give_back()

    def _forget(self, name: str, moved: bool) -> None:
        prefix = name + "/"
        for wd, folder in list(self.folders.items()):
            if folder == name or folder.startswith(prefix):
                del self.folders[wd]
                if moved:  # a deleted folder's watch goes by itself; a moved one's would keep reporting
                    try:
                        self.inotify.rm_watch(wd)
                    except OSError:
                        pass

    def _add_tree(self, top: str, skipped: set[str], ignored: Ask | None = None) -> None:
        """Watch ``top`` and the folders below it (:func:`.tree_walk.walk_levels`: no symlink
        followed, other repositories left out, bounded), each watched before it is listed, so a
        folder made inside it meanwhile comes as an event. In a new subtree the folders of each
        level are checked with ``ignored`` at once."""
        kept: list[str] = []
        visited: set[str] = set()

        def visit(name: str, fd: int) -> bool:
            visited.add(name)
            return self._watch(name, fd)

        def keep(below: list[str]) -> list[str]:
            below = [b for b in below if b not in self.skip]  # the daemon's own: read-only to commands
            asked = [b for b in below if b not in skipped]
            left = ignored(asked) if ignored is not None and asked else set()
            chosen = [b for b in asked if b not in left]
            self.blind = self.blind or len(chosen) < len(below)
            kept.extend(chosen)
            return chosen

        # the walk's count is the budget's: past it the watch is given up, not left with holes
        for _ in walk_levels(self.root_fd, [top], keep, visit=visit, skipped=self.skipped,
                             max_folders=total() + 1):
            pass
        # a kept folder not visited is another repository, or one that could not be opened
        self.blind = self.blind or bool(self.skipped) or any(name not in visited for name in kept)

    def _watch(self, name: str, fd: int) -> bool:
        if len(self.folders) >= self.granted:
            self.granted += budget.reserve(BLOCK)
            if len(self.folders) >= self.granted:
                self._break(f"the inotify watches all of this user's daemons may hold ({total()}) are taken")
                return False
        try:  # the folder the descriptor holds, whatever its path has become since
            wd = self.inotify.add_watch(f"/proc/self/fd/{fd}", WATCH)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:
                self._break("the system's limit of watched folders is reached (fs.inotify.max_user_watches)")
                return False
            self.blind = True  # not watched: a name in it is out of sight
            return True
        self.folders[wd] = name
        return True

    def _give_back(self) -> None:
        """Return to the budget the watches asked for and not used (a walk is done)."""
        if self.broken is None and self.granted > len(self.folders):
            budget.release(self.granted - len(self.folders))
            self.granted = len(self.folders)
