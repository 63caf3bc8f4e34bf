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


CLEAN = (-1,)  # a file listed before that is back to its snapshot state


def _stat(path: str) -> tuple[int, ...] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None  # deleted
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class GitSnapshot:
    """The worktree (beneath ``root``) as a tree object; :meth:`changes` compares it with now."""

    def __init__(self, root: str, index: str, env: dict[str, str], top: str) -> None:
        self.root = root
        self.index = index
        self.env = env
        self.top = top  # the work tree's top folder; git names paths relative to it
        self.base = ""
        self.spec: tuple[str, ...] = ("--", ".", ":(exclude).pi")  # the files beneath root, but .pi/
        self.seen: dict[bytes, tuple[int, ...] | None] = {}  # name -> stat data when last reported

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
        try:  # .pi/ ignored already: naming it in the pathspec would make `git add` fail
            _git(root, "check-ignore", "-q", ".pi")
            snap.spec = ("--", ".")
        except subprocess.CalledProcessError:
            pass
        try:
            shutil.copyfile(user_index, index)
        except OSError:
            os.unlink(index)
        try:
            snap.base = snap._write_tree()
        except subprocess.CalledProcessError:  # an index git cannot write a tree of (a merge conflict)
            try:
                os.unlink(index)
                snap.base = snap._write_tree()
            except (OSError, subprocess.CalledProcessError):
                snap.close()
                return None
        return snap

    def _write_tree(self) -> str:
        _git(self.root, "add", "-A", *self.spec, env=self.env)
        return _git(self.root, "write-tree", env=self.env).decode().strip()

    def changes(self) -> list[tuple[str, object]]:
        """Files changed since the last call (absolute paths), each with its content at the snapshot
        (bytes, or None when it did not exist then).

        The temporary index still holds the snapshot, with each file's stat data: ``diff-files``
        names the files that differ from it and ``ls-files --others`` the new ones, without
        hashing or storing anything (adding 200 changed files to the index costs a second, most
        of it compressing objects nobody reads). Of those, the ones whose stat data moved since
        the last call are the changes; a file that is back to its snapshot stat is one too."""
        try:
            listed = _git(self.root, "diff-files", "-z", "--name-only", *self.spec, env=self.env) + \
                _git(self.root, "ls-files", "-z", "--others", "--exclude-standard", "--full-name", *self.spec,
                     env=self.env)
        except subprocess.CalledProcessError:
            return []
        now = {name: _stat(os.path.join(self.top, name.decode("utf-8", "surrogateescape")))
               for name in listed.split(b"\0") if name}
        now.update({name: CLEAN for name in self.seen.keys() - now.keys()})
        names = sorted(name for name, key in now.items() if name not in self.seen or self.seen[name] != key)
        self.seen = {name: key for name, key in now.items() if key is not CLEAN}
        return [(os.path.join(self.top, name.decode("utf-8", "surrogateescape")), data)
                for name, data in zip(names, self.before(names))]

    def before(self, names: list[bytes]) -> list[bytes | None]:
        """Each file's content at the snapshot (None: not in it), read by one ``cat-file --batch``
        (a process per file costs more than all the diffs together)."""
        if not names:
            return []
        # One request per line: a name with a newline cannot be asked for this way (nor is it
        # likely); it is asked for alone. The tree path is relative to the work tree's top.
        plain = [n for n in names if b"\n" not in n]
        found: dict[bytes, bytes | None] = {}
        if plain:
            out = _git(self.root, "cat-file", "--batch",
                       data=b"".join(self.base.encode() + b":" + n + b"\n" for n in plain))
            at = 0
            for name in plain:
                end = out.index(b"\n", at)
                header = out[at:end].split(b" ")  # "<oid> <type> <size>", or "<name> missing"
                at = end + 1
                found[name] = None  # missing, or not a file (a folder, a submodule)
                if len(header) == 3 and header[2].isdigit():
                    size = int(header[2])
                    if header[1] == b"blob":
                        found[name] = out[at:at + size]
                    at += size + 1  # the content, then a newline
        for name in names:
            if name not in found:
                try:
                    found[name] = _git(self.root, "cat-file", "blob",
                                       f"{self.base}:{name.decode('utf-8', 'surrogateescape')}")
                except subprocess.CalledProcessError:
                    found[name] = None
        return [found[n] for n in names]

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
