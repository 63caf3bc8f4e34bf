"""What ``bash`` changed: a snapshot of the workspace when a run starts, compared later.

In a git work tree the snapshot is a tree object: the worktree is added to a
*temporary* index (``GIT_INDEX_FILE``, seeded with a copy of the user's index so only
changed files are hashed) and ``git write-tree`` names it. The user's index, stash and
refs are never touched; the only trace is unreferenced objects in the object store,
which ``git gc`` removes. Untracked files count, ignored ones (``.gitignore``) do not,
and the daemon's ``.pi/`` folder never does.

Outside git the snapshot is the size and mtime of each file under the workspace, and the
content of the small ones (bounded: :data:`MAX_FILES`, :data:`MAX_KEPT_BYTES`); a
changed file whose content was not kept is reported without its before-content.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MAX_FILES = 20_000
MAX_FILE_BYTES = 1 << 20
MAX_KEPT_BYTES = 64 << 20
SKIP_DIRS = {".git", ".pi", "node_modules", "__pycache__", ".venv", ".hg", ".svn"}
UNKNOWN = object()  # a before-content that was not kept


def _git(root: str, *args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-c", "core.fsmonitor=false", *args], cwd=root, input=data,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, check=True,
                          stdin=None if data is not None else subprocess.DEVNULL)
    return done.stdout


class GitSnapshot:
    """The worktree (beneath ``root``) as a tree object; :meth:`changes` compares it with now."""

    def __init__(self, root: str, index: str, env: dict[str, str], top: str) -> None:
        self.root = root
        self.index = index
        self.env = env
        self.top = top  # the work tree's top folder; git names paths relative to it
        self.base = ""
        self.last = ""

    @classmethod
    def take(cls, root: str) -> "GitSnapshot | None":
        try:
            top = _git(root, "rev-parse", "--show-toplevel").decode().strip()
            user_index = _git(root, "rev-parse", "--path-format=absolute", "--git-path", "index").decode().strip()
        except (OSError, subprocess.CalledProcessError):
            return None
        fd, index = tempfile.mkstemp(prefix="pi-daemon-index-")
        os.close(fd)
        env = {**os.environ, "GIT_INDEX_FILE": index, "GIT_OPTIONAL_LOCKS": "0"}
        snap = cls(root, index, env, top)
        try:
            shutil.copyfile(user_index, index)
        except OSError:
            os.unlink(index)
        try:
            snap.base = snap.last = snap._write_tree()
        except subprocess.CalledProcessError:  # an index git cannot write a tree of (a merge conflict)
            try:
                os.unlink(index)
                snap.base = snap.last = snap._write_tree()
            except (OSError, subprocess.CalledProcessError):
                snap.close()
                return None
        return snap

    def _write_tree(self) -> str:
        _git(self.root, "add", "-A", "--", ".", ":(exclude).pi", env=self.env)
        return _git(self.root, "write-tree", env=self.env).decode().strip()

    def changes(self) -> list[tuple[str, object]]:
        """Files changed since the last call (absolute paths), each with its content at the snapshot
        (bytes, or None when it did not exist then)."""
        try:
            tree = self._write_tree()
        except subprocess.CalledProcessError:
            return []
        if tree == self.last:
            return []
        out = _git(self.root, "diff-tree", "-r", "--no-renames", "--name-only", "-z", self.last, tree)
        self.last = tree
        names = [n.decode("utf-8", "surrogateescape") for n in out.split(b"\0") if n]
        return [(os.path.join(self.top, name), self.before(name)) for name in names]

    def before(self, name: str) -> bytes | None:
        try:
            return _git(self.root, "cat-file", "blob", f"{self.base}:{name}")
        except subprocess.CalledProcessError:
            return None

    def close(self) -> None:
        try:
            os.unlink(self.index)
        except OSError:
            pass


class StatSnapshot:
    """Outside git: sizes and mtimes, and the content of the small files, bounded."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.kept: dict[str, bytes] = {}
        self.base = self._scan(keep=True)
        self.last = dict(self.base)

    def _scan(self, keep: bool = False) -> dict[str, tuple[int, int]]:
        seen: dict[str, tuple[int, int]] = {}
        budget = MAX_KEPT_BYTES
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                seen[path] = (st.st_mtime_ns, st.st_size)
                if keep and st.st_size <= min(MAX_FILE_BYTES, budget):
                    try:
                        self.kept[path] = Path(path).read_bytes()
                        budget -= st.st_size
                    except OSError:
                        pass
                if len(seen) >= MAX_FILES:
                    return seen
        return seen

    def changes(self) -> list[tuple[str, object]]:
        now = self._scan()
        changed = [p for p in now.keys() | self.last.keys() if now.get(p) != self.last.get(p)]
        self.last = now
        return [(p, self.kept.get(p, UNKNOWN) if p in self.base else None) for p in sorted(changed)]

    def close(self) -> None:
        self.kept.clear()


def take(root: str) -> GitSnapshot | StatSnapshot:
    return GitSnapshot.take(root) or StatSnapshot(root)


async def take_async(root: str) -> GitSnapshot | StatSnapshot:
    return await asyncio.to_thread(take, root)
