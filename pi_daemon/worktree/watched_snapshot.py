"""What ``bash`` changed in a git work tree, at a cost that does not grow with the tree.

The worktree is read in full once (the *base*: a tree object written as
:class:`~.snapshot.GitSnapshot` writes one, isolated from the repository's programs), while
a :class:`~.tree_watch.TreeWatch` notes every name touched from then on. A run's snapshot is
the base plus the content, read when the run's first command starts, of the names touched
since the base was read (kept in memory, bounded: past :data:`MAX_OVERLAY` names or
:data:`MAX_OVERLAY_BYTES` the base is read again instead). What a command changed is
the names touched while it ran, each compared with the snapshot: its before-content is the
base's blob (one ``cat-file`` for all) or the content kept. So neither taking a snapshot nor
looking at a command's changes reads the unchanged tree.

Which names count is the full scan's rule: what the snapshot held (tracked files, and
untracked ones not ignored), and new files git does not ignore (``check-ignore``, reading
the ``.gitignore`` files as data). When the watch lost events (the kernel's queue
overflowed), or a ``.gitignore`` changed, the worktree is read in full again, once; where the
kernel cannot watch (another system, the limit of watches reached) every run takes a full
snapshot (:func:`take` falls back to :class:`~.snapshot.GitSnapshot`).
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import time
from typing import TYPE_CHECKING

from ..guard.repositories import find_repo
from ..guard.safe_open import open_root
from ..guard.tree_walk import Skipped
from .git_isolated import GitRunError, sweep_stale
from .ignore_check import IgnoreCheck
from .snapshot import UNKNOWN, GitSnapshot, StatSnapshot, blobs_by_id
from .tree_lookups import (LARGE, Before, ancestors, daemons_own, ignored, in_other_repositories, look_up, present,
                           read_kept, stat_key, walk)

if TYPE_CHECKING:
    from .tree_watch import Marks

log = logging.getLogger(__name__)

MAX_OVERLAY = 5_000  # names kept beside the base before the base is read again
MAX_OVERLAY_BYTES = 16 << 20  # their contents, held in memory for the daemon's life
MAX_TREES = 4  # work trees watched at once by one daemon
MAX_TREES_LISTED = 200  # folders made, moved or deleted at once; past that the tree is read in full
CLOCK_SLACK_NS = 50_000_000  # file times come from a coarser clock than time.time_ns()


class WatchedTree:
    """One workspace's base, overlay and watch, kept for the daemon's life."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.lock = threading.Lock()
        self.base: GitSnapshot | None = None
        self.overlay: dict[str, Before] = {}  # name (relative to root) -> content when last read
        self.kept = 0  # bytes held by the overlay
        self.users: dict[GitSnapshot, int] = {}  # base -> runs using it
        from .tree_watch import TreeWatch  # Linux only (inotify): elsewhere this raises ImportError

        self.watch = TreeWatch(root, self._asking, skip={".pi"})
        self.pending = self.watch.reader()  # touched since the overlay was last brought up to date

    @property
    def usable(self) -> bool:
        return self.watch.broken is None and self.base is not None

    def start(self) -> None:
        """Watch, then read the worktree (a change made meanwhile is noted, and read again later)."""
        self.base = GitSnapshot.take(self.root, before_reading=lambda snap: self.watch.start(self._skipped(snap)))
        if self.base is None:
            self.close()
            raise OSError("not a git work tree git can read")
        self.users[self.base] = 0

    def _skipped(self, snap: GitSnapshot) -> set[str]:
        """The folders git ignores as a whole (none of their files tracked): not watched."""
        try:
            out = snap.git.run("ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory",
                               cwd=self.root)
        except GitRunError:
            return set()
        return {os.fsdecode(name).rstrip("/") for name in out.split(b"\0") if name.endswith(b"/")}

    def _asking(self) -> IgnoreCheck:
        return IgnoreCheck(self.base.git if self.base is not None else None, self.root)

    # --- a run's snapshot ------------------------------------------------------------

    def snapshot(self) -> "WatchSnapshot | None":
        with self.lock:
            if not self.usable:
                return None
            self.watch.flush()
            if self.watch.stale:
                assert self.base is not None
                self.watch.rewalk(self._skipped(self.base))
            files, trees, everything = self.pending.take()
            if self.watch.broken is not None:
                return None
            names = None if everything else self._expand(files, trees)
            if names is None or len(self.overlay) + len(names) > MAX_OVERLAY or self.kept > MAX_OVERLAY_BYTES:
                if not self._read_again():
                    return None
            else:
                self._keep(names)
            assert self.base is not None
            self.users[self.base] += 1
            return WatchSnapshot(self, self.base, dict(self.overlay), self.watch.reader())

    def _read_again(self) -> bool:
        """A new base: the worktree read in full (the pending names are all in it)."""
        base = GitSnapshot.take(self.root)
        if base is None:
            return False
        old, self.base = self.base, base
        self.users[base] = 0
        self.overlay, self.kept = {}, 0
        if old is not None:
            self.release(old, 0)
        return True

    def release(self, base: GitSnapshot, runs: int = 1) -> None:
        self.users[base] -= runs
        if base is not self.base and self.users[base] <= 0:
            del self.users[base]
            base.close()

    def _keep(self, names: set[str]) -> None:
        """Read the content of the touched names into the overlay: what the snapshot will say
        they held. A name the base does not hold and git ignores is kept as not counted."""
        if not names:
            return
        assert self.base is not None
        ordered = sorted(names)
        tops = [self._top(n) for n in ordered]
        held = look_up(self.base, tops)[self.base.base]
        new = [n for n, top in zip(ordered, tops) if held.get(top) is None and present(os.path.join(self.root, n))]
        left_out = ignored(self.base, self.root, new)
        root_fd = open_root(self.root)
        try:
            for name in ordered:
                old = self.overlay.get(name)
                if isinstance(old, bytes):
                    self.kept -= len(old)
                content = None if name in left_out else read_kept(root_fd, name, MAX_OVERLAY_BYTES - self.kept)
                self.overlay[name] = content
                if isinstance(content, bytes):
                    self.kept += len(content)
        finally:
            os.close(root_fd)

    def _top(self, name: str) -> str:
        """``name`` (relative to the root) as git names it (relative to the work tree's top)."""
        assert self.base is not None
        return os.path.relpath(os.path.join(self.root, name), self.base.top)

    def _name(self, base: GitSnapshot, top_name: bytes) -> str:
        """A name as git gives it (relative to the top) as the watch names it (relative to the root)."""
        return os.path.relpath(os.path.join(base.top, os.fsdecode(top_name)), self.root)

    def _expand(self, files: set[str], trees: set[str], base: GitSnapshot | None = None,
                overlay: dict[str, Before] | None = None) -> set[str] | None:
        """The names ``files`` and ``trees`` stand for: a tree is every name below it in the base,
        the overlay and on the disk (git's ignored folders left out). None: too many."""
        base = base or self.base
        overlay = self.overlay if overlay is None else overlay
        assert base is not None
        trees = {t for t in trees if not daemons_own(t)}
        trees = {t for t in trees if not any(a in trees for a in ancestors(t))}
        if len(trees) > MAX_TREES_LISTED:
            return None
        names = {n for n in files if not daemons_own(n)} | trees
        if trees:
            try:
                listed = base.git.run("ls-tree", "-r", "-z", "--name-only", "--full-tree", base.base, "--",
                                      *sorted(self._top(t) for t in trees), cwd=base.top)
            except GitRunError:
                listed = b""
            names.update(self._name(base, n) for n in listed.split(b"\0") if n)
            names.update(n for n in overlay if any(a in trees for a in ancestors(n)))
            left_out = Skipped()
            names.update(walk(base, self.root, sorted(trees), left_out, MAX_OVERLAY))
            with self.watch.lock:
                self.watch.skipped.update(left_out)
            names -= in_other_repositories(self.root, names)
        return None if len(names) > MAX_OVERLAY else names

    def close(self) -> None:
        self.watch.close()
        for base in list(self.users):
            base.close()
        self.users.clear()
        self.base = None


class WatchSnapshot:
    """A run's snapshot: a base and the overlay as they were when it was taken."""

    def __init__(self, tree: WatchedTree, base: GitSnapshot, overlay: dict[str, Before], marks: Marks) -> None:
        self.tree = tree
        self.base = base
        self.overlay = overlay
        self.marks = marks
        self.head = base.git.repo.head()  # the commit a committed before-content is named from
        self.reported: set[str] = set()
        self.taken = time.time_ns() - CLOCK_SLACK_NS
        self.unseen: dict[str, tuple[int, ...] | None] = {}  # name -> stat when last found by _unseen
        self.unconfined = False  # a command of the run could write outside the tree (no sandbox, more roots)

    def changes(self) -> list[tuple[str, object, str | None]]:
        """Files changed since the last call, as :meth:`GitSnapshot.changes` gives them."""
        tree = self.tree
        with tree.lock:
            tree.watch.flush()
            files, trees, everything = self.marks.take()
            names = None if everything or tree.watch.broken else tree._expand(files, trees, self.base, self.overlay)
            if names is None:
                names = self._all_changed()
            return self._compare(sorted(names))

    def hidden_changes(self) -> list[tuple[str, object, str | None]]:
        """Files changed since the snapshot through names the watch does not see (:meth:`_unseen`),
        as :meth:`changes` gives them; asked once a run, at its end. Only where such a name can
        be: a folder of the tree the watch leaves out, or outside the tree for a command that
        could write there (no sandbox, more roots); elsewhere every write comes as an event."""
        tree = self.tree
        if not (self.unconfined or tree.watch.blind):
            return []
        with tree.lock:
            found = self._unseen()
            tree.watch.touched(found)  # so the overlay, and the next run's before-contents, read them again
            return self._compare(sorted(found))

    def _unseen(self) -> set[str]:
        """Tracked files whose inode changed since the snapshot was taken (its ctime, which no one
        can set) and since they were last found here: the base's index compared with the disk
        (``diff-files``: stat data, nothing read). A write the watch saw is among them too
        (read again: the same content)."""
        base, tree = self.base, self.tree
        try:
            out = base.git.run("diff-files", "-z", "--name-only", "--ignore-submodules=all", *base.spec, cwd=tree.root)
        except GitRunError as exc:
            log.warning("%s: writes through names the watch does not see were not looked for: %s", tree.root, exc)
            return set()
        found = set()
        root_fd = open_root(tree.root)
        try:
            for top_name in out.split(b"\0"):
                name = tree._name(base, top_name) if top_name else ""
                if not name or daemons_own(name):
                    continue
                key = stat_key(root_fd, name)  # a deletion is never hidden: it is made through this name
                if key is not None and key[0] >= self.taken and self.unseen.get(name) != key:
                    found.add(name)
                self.unseen[name] = key  # as it is now: found again only once it moves
        finally:
            os.close(root_fd)
        return found

    def _all_changed(self) -> set[str]:
        """Every name that differs from the snapshot, the worktree read in full (the watch lost
        events): the base's index brought up to now, its tree compared with the base's."""
        base, tree = self.base, self.tree
        try:
            now, large = base.write_tree()
            out = base.git.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", base.base, now,
                               "--", *base.spec[1:], cwd=tree.root)
        except GitRunError:
            return set(self.overlay) | self.reported
        names = {tree._name(base, n) for n in out.split(b"\0") if n}
        names.update(os.path.relpath(path, tree.root) for path in large.keys() ^ base.large.keys())
        return names | set(self.overlay) | self.reported

    def _compare(self, names: list[str]) -> list[tuple[str, object, str | None]]:
        tree, base = self.tree, self.base
        from_base = [n for n in names if n not in self.overlay]
        tops = {n: tree._top(n) for n in from_base}
        found = look_up(base, list(tops.values()), self.head)
        held, committed = found[base.base], found.get(self.head or "", {})
        blobs = [oid for oid in held.values() if oid is not None and oid not in found[LARGE]]
        try:
            contents = blobs_by_id(base.git, blobs, small=True) if blobs else {}
        except GitRunError:
            contents = {}
        befores: dict[str, tuple[object, str | None]] = {}
        for name in names:
            if name in self.overlay:
                befores[name] = (self.overlay[name], None)
            elif os.path.join(tree.root, name) in base.large:  # too large to diff when the base was read
                befores[name] = (UNKNOWN, None)
            else:
                oid = held.get(tops[name])
                content = contents.get(oid, UNKNOWN) if oid is not None else None
                ref = oid if oid is not None and content is not UNKNOWN and committed.get(tops[name]) == oid else None
                befores[name] = (content, ref)
        appeared = [n for n in names if befores[n][0] is None and n not in self.reported
                    and present(os.path.join(tree.root, n))]
        left_out = ignored(base, tree.root, appeared)
        out = []
        for name in names:
            before, ref = befores[name]
            if before is None and name not in self.reported:
                if name in left_out or name not in appeared:
                    continue
            self.reported.add(name)
            out.append((os.path.join(tree.root, name), before, ref))
        return out

    def close(self) -> None:
        self.tree.watch.drop(self.marks)
        with self.tree.lock:
            self.tree.release(self.base)


# --- the daemon's watched trees --------------------------------------------------------

_trees: dict[str, WatchedTree] = {}
_trees_lock = threading.Lock()
_given_up: set[str] = set()  # work trees the kernel would not watch: full snapshots for the daemon's life


def watched(root: str) -> WatchedTree | None:
    """The kept watch of ``root``'s work tree, started (reading the tree once) if need be;
    None where the kernel cannot watch it."""
    key = os.path.realpath(root)
    with _trees_lock:
        tree = _trees.get(key)
        if tree is not None and tree.usable:
            _trees[key] = _trees.pop(key)  # most recently used last
            return tree
        if tree is not None:
            del _trees[key]
            tree.close()
            _given_up.add(key)
        if key in _given_up:
            return None
        idle = [k for k, t in _trees.items() if all(n == 0 for n in t.users.values())]
        if len(_trees) >= MAX_TREES:
            if not idle:
                return None
            _trees.pop(idle[0]).close()
        if find_repo(key) is None:
            return None
        if not _trees:
            sweep_stale()  # a base is kept for the daemon's life: a killed daemon's is removed here
        try:
            tree = WatchedTree(key)
        except (OSError, ImportError) as exc:  # no inotify here, or too many watchers
            log.info("cannot watch %s: %s", key, exc)
            _given_up.add(key)
            return None
        try:
            tree.start()
        except (OSError, GitRunError) as exc:
            log.info("cannot watch %s: %s", key, exc)
            tree.close()
            _given_up.add(key)
            return None
        if not tree.usable:  # the kernel's limit was reached while walking
            tree.close()
            _given_up.add(key)
            return None
        _trees[key] = tree
        return tree


@atexit.register
def close_all() -> None:
    with _trees_lock:
        for tree in _trees.values():
            tree.close()
        _trees.clear()
        _given_up.clear()


def take(root: str) -> WatchSnapshot | GitSnapshot | StatSnapshot:
    tree = watched(root)
    snap = tree.snapshot() if tree is not None else None
    return snap or GitSnapshot.take(root) or StatSnapshot(root)


def left_out(snapshot: WatchSnapshot | GitSnapshot | StatSnapshot) -> list[tuple[str, str]]:
    """The folders the snapshot's walks have left out so far (relative to the root), each with why."""
    if isinstance(snapshot, StatSnapshot):
        return snapshot.skipped.listed()
    if isinstance(snapshot, WatchSnapshot):
        with snapshot.tree.watch.lock:
            return snapshot.tree.watch.skipped.listed()
    return []  # the full read is git's own: it leaves nothing out


async def take_async(root: str) -> WatchSnapshot | GitSnapshot | StatSnapshot:
    return await asyncio.to_thread(take, root)
