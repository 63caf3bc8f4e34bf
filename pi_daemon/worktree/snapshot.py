"""What ``bash`` changed: a snapshot of the workspace when a run starts, compared later.

In a git work tree the snapshot is a tree object: the worktree is added to a
*temporary* index (seeded with a copy of the user's index so only changed files are
hashed) and ``git write-tree`` names it; a file too large to diff is left out of it and
listed by size and time (:mod:`.unread`), so neither git nor the daemon reads it. Git runs isolated from the repository's own
configuration, hooks and attributes (:mod:`.git_isolated`): it reads only data. The
user's index, stash, refs and object store are never touched; the objects the snapshot
writes go to a private folder removed with it. Untracked files count, ignored ones
(``.gitignore``) do not, and the daemon's ``.pi/`` folder never does.

Outside git the snapshot is the size and mtime of each file under the workspace, and the
content of the small ones (bounded: :data:`MAX_FILES`, :data:`MAX_KEPT_BYTES`); a
changed file whose content was not kept is reported without its before-content.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable

from ..guard.repositories import find_repo, read_data
from .git_isolated import GitRunError, IsolatedGit
from ..guard.tree_walk import Skipped, stat_walk
from .unread import MAX_DIFF_BYTES, Unread, large_files

MAX_FILES = 20_000
MAX_FILE_BYTES = 1 << 20
MAX_KEPT_BYTES = 64 << 20
SKIP_DIRS = {".git", ".pi", "node_modules", "__pycache__", ".venv", ".hg", ".svn"}
UNKNOWN = object()  # a before-content that was not kept


def read_git_blobs(root: str, oids: list[str]) -> dict[str, bytes]:
    """The content of each blob id that the repository holding ``root`` has (one ``cat-file
    --batch`` for all; a process per blob costs more than all the diffs together)."""
    repo = find_repo(root) if oids else None
    if repo is None:
        return {}
    try:
        with IsolatedGit(repo) as git:
            return blobs_by_id(git, oids)
    except (OSError, GitRunError):
        return {}


def blobs_by_id(git: IsolatedGit, oids: list[str], small: bool = False) -> dict[str, bytes]:
    """The content of each of ``oids`` that is a blob, read with one ``cat-file --batch``; one over
    :data:`.unread.MAX_DIFF_BYTES` is left out (``small``: the caller has left those out already)."""
    if not small:
        oids = [oid for oid, kind, size in objects(git, oids).values() if kind == "blob" and size <= MAX_DIFF_BYTES]
        if not oids:
            return {}
    out = git.run("cat-file", "--batch", data="".join(f"{oid}\n" for oid in oids).encode())
    found: dict[str, bytes] = {}
    at = 0
    for oid in oids:
        end = out.find(b"\n", at)
        if end < 0:
            break
        header = out[at:end].split(b" ")  # "<oid> <type> <size>", or "<oid> missing"
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            if header[1] == b"blob":
                found[oid] = out[at:at + size]
            at += size + 1  # the content, then a newline
    return found


def objects(git: IsolatedGit, names: list[str]) -> dict[str, tuple[str, str, int]]:
    """Each object name's (id, type, size), ``<tree>:<path>`` names too, with one ``cat-file
    --batch-check``; a name that is no object is left out."""
    asked = [name for name in dict.fromkeys(names) if "\n" not in name]
    if not asked:
        return {}
    out = git.run("cat-file", "--batch-check=%(objectname) %(objecttype) %(objectsize)",
                  data=os.fsencode("".join(f"{name}\n" for name in asked)))
    found = {}
    for name, line in zip(asked, out.decode("ascii", "replace").splitlines()):
        parts = line.split(" ")
        if len(parts) == 3 and parts[2].isdigit():
            found[name] = (parts[0], parts[1], int(parts[2]))
    return found


_GITLINK = re.compile(rb"(?:^|\0)160000 [^\t\0]*\t([^\0]+)")  # an index entry that is a submodule
CLEAN = (-1,)  # a file listed before that is back to its snapshot state


def _stat(path: str) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None  # deleted
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class GitSnapshot:
    """The worktree (beneath ``root``) as a tree object; :meth:`changes` compares it with now."""

    def __init__(self, root: str, git: IsolatedGit) -> None:
        self.root = root
        self.git = git
        self.top = git.repo.top  # the work tree's top folder; git names paths relative to it
        self.base = ""
        self.spec: tuple[str, ...] = ("--", ".", ":(exclude).pi")  # the files beneath root, but .pi/
        self.seen: dict[bytes, tuple[int, ...] | None] = {}  # name -> stat data when last reported
        self.ids: dict[bytes, str | None] = {}  # name -> its blob id in the snapshot (None: not a file)
        self.uncommitted: tuple[bool, set[bytes]] | None = None
        self.large: dict[str, Unread] = {}  # absolute path -> the file too large to diff at the snapshot

    @classmethod
    def take(cls, root: str, before_reading: Callable[["GitSnapshot"], None] | None = None) -> "GitSnapshot | None":
        """The snapshot; ``before_reading`` is called with it just before the worktree is read."""
        repo = find_repo(root)
        if repo is None:
            return None
        try:
            git = IsolatedGit(repo, seed_index=True)
        except OSError:
            return None
        snap = cls(root, git)
        try:  # .pi/ ignored already: naming it in the pathspec would make `git add` fail
            git.run("check-ignore", "-q", ".pi", cwd=root)
            snap.spec = ("--", ".")
        except GitRunError:
            pass
        if before_reading is not None:
            try:
                before_reading(snap)
            except BaseException:
                snap.close()
                raise
        try:
            snap.base, snap.large = snap.write_tree()
        except GitRunError:  # an index git cannot write a tree of (a merge conflict, another format)
            try:
                git.drop_index()
                snap.base, snap.large = snap.write_tree()
            except (OSError, GitRunError):
                snap.close()
                return None
        return snap

    def write_tree(self) -> tuple[str, dict[str, Unread]]:
        """The worktree (beneath the root) added to the private index, written as a tree object,
        and the files left out of it as too large to diff (absolute paths)."""
        large = large_files(self.git, self.root, self.spec)
        if not large:
            self.git.run("add", "-A", *self.spec, *self._submodules(), cwd=self.root)
        else:  # as many names as there are: given on standard input, not as arguments
            left_out = [":(top,exclude,literal)" + os.path.relpath(path, self.top) for path in large]
            specs = [*self.spec[1:], *self._submodules(), *left_out]
            self.git.run("add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul", cwd=self.root,
                         data=b"".join(os.fsencode(s) + b"\0" for s in specs))
        return self.git.run("write-tree", cwd=self.root).decode().strip(), large

    def _submodules(self) -> list[str]:
        """Pathspecs leaving out the submodules the index records: ``add`` asks a changed one for
        its state by running git inside it, which obeys the submodule's own configuration."""
        listed = self.git.run("ls-files", "-z", "--stage", "--full-name", cwd=self.root)
        return [":(top,exclude,literal)" + os.fsdecode(name) for name in _GITLINK.findall(listed)]

    def changes(self) -> list[tuple[str, object, str | None]]:
        """Files changed since the last call (absolute paths), each with its content at the snapshot
        (bytes, or None when it did not exist then) and, when that content is committed (the
        blob of HEAD's tree), its git blob id.

        The temporary index still holds the snapshot, with each file's stat data and blob id:
        ``diff-files`` names the files that differ from it and ``ls-files --others`` the new
        ones, without hashing or storing anything (adding 200 changed files to the index costs
        a second, most of it compressing objects nobody reads). Of those, the ones whose stat
        data moved since the last call are the changes; a file that is back to its snapshot
        stat is one too. The before-contents are read by blob id with one ``cat-file --batch``."""
        try:
            # A submodule's own state would be asked of git run inside it, with its own config.
            raw = self.git.run("diff-files", "-z", "--raw", "--ignore-submodules=all", *self.spec, cwd=self.root)
            others = self.git.run("ls-files", "-z", "--others", "--exclude-standard", "--full-name", *self.spec,
                                  cwd=self.root)
        except GitRunError:
            return []
        fields = raw.split(b"\0")
        for header, name in zip(fields[0::2], fields[1::2]):  # ":<mode> <mode> <id> <id> <status>", name
            parts = header.split(b" ")
            if len(parts) >= 3 and name not in self.ids:  # the index's side is the snapshot: it never moves
                self.ids[name] = parts[2].decode() if parts[0] not in (b":160000", b":000000") else None
        listed = [name for name in fields[1::2] if name] + [name for name in others.split(b"\0") if name]
        now = {name: _stat(os.path.join(self.top, name.decode("utf-8", "surrogateescape"))) for name in listed}
        now.update({name: CLEAN for name in self.seen.keys() - now.keys()})
        names = sorted(name for name, key in now.items() if name not in self.seen or self.seen[name] != key)
        self.seen = {name: key for name, key in now.items() if key is not CLEAN}
        oids = [self.ids.get(name) for name in names]
        try:
            contents = blobs_by_id(self.git, [oid for oid in oids if oid is not None]) if any(oids) else {}
        except GitRunError:
            contents = {}
        has_head, uncommitted = self._committed()
        out: list[tuple[str, object, str | None]] = []
        for name, oid in zip(names, oids):
            path = os.path.join(self.top, name.decode("utf-8", "surrogateescape"))
            before = UNKNOWN if path in self.large else None if oid is None else contents.get(oid, UNKNOWN)
            ref = oid if isinstance(before, bytes) and has_head and name not in uncommitted else None
            out.append((path, before, ref))
        return out

    def _committed(self) -> tuple[bool, set[bytes]]:
        """(whether HEAD is a commit, the names whose snapshot blob is not HEAD's): a committed
        blob stays in the repository, the others are loose objects ``git gc`` may drop."""
        if self.uncommitted is None:
            try:
                if not self.git.has_head:
                    raise GitRunError("no commit yet")
                out = self.git.run("diff-index", "--cached", "-z", "--name-only", "--no-renames", "HEAD",
                                   *self.spec, cwd=self.root)
                self.uncommitted = (True, {name for name in out.split(b"\0") if name})
            except GitRunError:  # no commit yet
                self.uncommitted = (False, set())
        return self.uncommitted

    def close(self) -> None:
        self.git.close()


class StatSnapshot:
    """Outside git: sizes and mtimes, and the content of the small files, bounded; the folders
    its walk left out (:mod:`.tree_walk`'s bounds) are in :attr:`skipped`."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.kept: dict[str, bytes] = {}
        self.skipped = Skipped()
        self.base = self._scan(keep=True)
        self.last = dict(self.base)

    def _scan(self, keep: bool = False) -> dict[str, tuple[int, int]]:
        seen: dict[str, tuple[int, int]] = {}
        budget = MAX_KEPT_BYTES
        for name, st in stat_walk(self.root, SKIP_DIRS, MAX_FILES, self.skipped):
            path = os.path.join(self.root, name)
            seen[path] = (st.st_mtime_ns, st.st_size)
            if keep and stat.S_ISREG(st.st_mode) and st.st_size <= min(MAX_FILE_BYTES, budget):
                data = read_data(path, min(MAX_FILE_BYTES, budget))  # not through a symlink swapped in
                if data is not None:
                    self.kept[path] = data
                    budget -= len(data)
        return seen

    def changes(self) -> list[tuple[str, object, str | None]]:
        now = self._scan()
        changed = [p for p in now.keys() | self.last.keys() if now.get(p) != self.last.get(p)]
        self.last = now
        return [(p, self.kept.get(p, UNKNOWN) if p in self.base else None, None) for p in sorted(changed)]

    def close(self) -> None:
        self.kept.clear()
