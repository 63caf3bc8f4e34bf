"""The daemon's own runs of git on a workspace's repository, isolated from all the repository controls.

A cloned repository is hostile input, and git obeys its repository: ``.git/config`` can name
programs (``filter.<x>.clean`` and ``.process``, ``core.fsmonitor``, ``core.hooksPath``,
``diff.external``, ``include.path`` to any file), ``.git/hooks`` are programs, and
``.gitattributes`` chooses which filter runs on which file. Git has no switch that ignores a
repository's own configuration, so the daemon never lets git see it: each run gets a
*private* git folder made here, with

* a ``config`` the daemon writes (no hooks, no fsmonitor, no filters, no includes), and no
  system or global configuration (``GIT_CONFIG_NOSYSTEM``, ``GIT_CONFIG_GLOBAL=/dev/null``,
  ``GIT_ATTR_NOSYSTEM``);
* ``info/attributes`` saying ``* -text -eol -filter -diff -merge -ident -working-tree-encoding``
  (it outranks every ``.gitattributes`` of the work tree): files are hashed as their bytes;
* the repository's objects reached read-only as an *alternate* object store, and objects
  git writes kept in the private folder, removed with it;
* the repository's ``HEAD`` (resolved here to a commit, reading ``HEAD``, ``refs/`` and
  ``packed-refs`` as data), its ``info/exclude`` and its index copied in as data, each
  opened without following a symlink, only when a regular file, and bounded.

Git then reads only data from the repository: file contents, ``.gitignore`` files, objects.
Its environment is a fixed one (no API keys), and each run has a time limit.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import attrs

from ..programs import search_path, which
from .safe_open import read_regular

RUN_SECONDS = 120.0  # one git run: a FIFO among the objects, or a huge repository, cannot hold the daemon
MAX_INDEX_BYTES = 512 << 20
MAX_PACKED_REFS_BYTES = 64 << 20
MAX_SMALL_BYTES = 64 << 10  # HEAD, a ref, a ``.git`` file, ``commondir``, ``info/exclude``
_OID = re.compile(rb"[0-9a-f]{40}|[0-9a-f]{64}")
_REF = re.compile(rb"refs/[A-Za-z0-9._/-]{1,1000}")
CONFIG = """[core]
\trepositoryformatversion = 0
\tbare = false
\tlogallrefupdates = false
\thooksPath = /dev/null
\tfsmonitor = false
\tuntrackedCache = false
\tsymlinks = true
\tfilemode = true
\tautocrlf = false
\tsafecrlf = false
[gc]
\tauto = 0
[diff]
\tignoreSubmodules = all
[submodule]
\trecurse = false
"""
ATTRIBUTES = "* -text -eol -filter -diff -merge -ident -working-tree-encoding\n"


PRIVATE_PREFIX = "pi-daemon-git-"  # then the daemon's process id: what a killed daemon left is found by it


def sweep_stale() -> None:
    """Remove the private git folders of daemons that are gone (killed before they could):
    this user's, named for a process that no longer exists."""
    folder = tempfile.gettempdir()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = name[len(PRIVATE_PREFIX):].split("-", 1)[0]
        if not name.startswith(PRIVATE_PREFIX) or not pid.isdigit() or int(pid) == os.getpid():
            continue
        path = os.path.join(folder, name)
        try:
            info = os.lstat(path)
            os.kill(int(pid), 0)
            continue  # that daemon is running
        except ProcessLookupError:
            pass
        except OSError:
            continue  # gone already, or another user's process
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)


class GitRunError(Exception):
    """Git failed (its exit status and what it said), timed out, or could not be started."""


def read_data(path: str, limit: int) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (not a symlink, FIFO or device) of at most
    ``limit`` bytes; else None."""
    try:
        return read_regular(path, limit)
    except OSError:
        return None


@attrs.frozen
class Repo:
    """Where a work tree's repository keeps what the daemon reads of it."""

    top: str  # the work tree's top folder
    git_dir: str  # HEAD and the index (a linked work tree has its own)
    common_dir: str  # objects, refs, info/exclude

    @property
    def objects(self) -> str:
        return os.path.join(self.common_dir, "objects")

    def head(self) -> str | None:
        """The commit ``HEAD`` names (None: none yet, or it cannot be read as plain data)."""
        data = read_data(os.path.join(self.git_dir, "HEAD"), MAX_SMALL_BYTES)
        for _ in range(5):  # a symbolic ref may name another one
            if data is None:
                return None
            data = data.strip()
            if _OID.fullmatch(data):
                return data.decode()
            if not data.startswith(b"ref: ") or not _REF.fullmatch(data[5:]) or b".." in data:
                return None
            data = self._ref(data[5:])
        return None

    def _ref(self, name: bytes) -> bytes | None:
        found = read_data(os.path.join(self.common_dir, os.fsdecode(name)), MAX_SMALL_BYTES)
        if found is not None:
            return found
        packed = read_data(os.path.join(self.common_dir, "packed-refs"), MAX_PACKED_REFS_BYTES)
        for line in (packed or b"").splitlines():
            oid, _, ref = line.partition(b" ")
            if ref == name and _OID.fullmatch(oid):
                return oid
        return None


def find_repo(root: str) -> Repo | None:
    """The repository whose work tree holds ``root`` (None: none, or one git would have to be
    trusted to read: a ``.git`` that is a symlink, or names its folder oddly)."""
    folder = os.path.realpath(root)
    if not os.path.isdir(folder):
        return None
    while True:
        dot_git = os.path.join(folder, ".git")
        try:
            info = os.lstat(dot_git)
        except OSError:
            info = None
        if info is not None:
            if stat.S_ISDIR(info.st_mode):
                git_dir: str | None = dot_git
            elif stat.S_ISREG(info.st_mode):
                git_dir = _pointed(dot_git, folder)
            else:
                return None
            if git_dir is None or not os.path.isdir(git_dir):
                return None
            common = read_data(os.path.join(git_dir, "commondir"), MAX_SMALL_BYTES)
            common_dir = git_dir
            if common is not None:  # a linked work tree's folder lies inside its repository's
                named = os.fsdecode(common.strip())
                common_dir = os.path.realpath(os.path.join(git_dir, named))
                if not named or "\n" in named or not os.path.realpath(git_dir).startswith(common_dir + os.sep):
                    return None
            if not os.path.isdir(os.path.join(common_dir, "objects")) or "\n" in common_dir:
                return None
            return Repo(folder, git_dir, common_dir)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _pointed(dot_git: str, folder: str) -> str | None:
    """The folder a ``.git`` file (``gitdir: <path>``) names, if it is this work tree's: a linked
    work tree's (its ``gitdir`` file names this ``.git`` back) or a submodule's (inside the
    ``.git`` folder of a folder above). A ``.git`` file naming another repository on the disk
    would hand the snapshot that repository's index and objects."""
    data = read_data(dot_git, MAX_SMALL_BYTES)
    if data is None or not data.startswith(b"gitdir: "):
        return None
    named = os.fsdecode(data[len(b"gitdir: "):].strip())
    if not named or "\n" in named:
        return None
    git_dir = os.path.realpath(os.path.join(folder, named))
    back = read_data(os.path.join(git_dir, "gitdir"), MAX_SMALL_BYTES)
    if back is not None and os.path.realpath(os.fsdecode(back.strip())) == os.path.realpath(dot_git):
        return git_dir
    above = os.path.dirname(folder)
    while above != os.path.dirname(above):
        if git_dir.startswith(os.path.join(above, GIT_FOLDER) + os.sep):
            return git_dir
        above = os.path.dirname(above)
    return None


class IsolatedGit:
    """A private git folder for ``repo``: every :meth:`run` reads the repository as data only.
    :meth:`close` removes the folder and the objects written into it."""

    def __init__(self, repo: Repo, seed_index: bool = False) -> None:
        self.repo = repo
        self.dir = tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{os.getpid()}-")
        self.index = os.path.join(self.dir, "index")
        try:
            self._lay_out(seed_index)
        except BaseException:
            self.close()
            raise
        self.env = {
            "PATH": search_path(), "HOME": self.dir, "XDG_CONFIG_HOME": self.dir,
            "LC_ALL": "C", "GIT_DIR": self.dir, "GIT_WORK_TREE": repo.top, "GIT_INDEX_FILE": self.index,
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
            "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_NO_REPLACE_OBJECTS": "1",
        }

    def _lay_out(self, seed_index: bool) -> None:
        for sub in ("objects/info", "refs/heads", "refs/tags", "info"):
            os.makedirs(os.path.join(self.dir, sub))
        head = self.repo.head()
        self.has_head = head is not None
        self._write("HEAD", f"{head}\n" if head else "ref: refs/heads/none\n")
        self._write("config", CONFIG)
        self._write("info/attributes", ATTRIBUTES)
        self._write("objects/info/alternates", self.repo.objects + "\n")
        exclude = read_data(os.path.join(self.repo.common_dir, "info", "exclude"), MAX_SMALL_BYTES)
        if exclude is not None:
            self._write("info/exclude", exclude)
        if seed_index:  # git then hashes only what changed since the user's own index was written
            index = read_data(os.path.join(self.repo.git_dir, "index"), MAX_INDEX_BYTES)
            if index is not None:
                self._write("index", index)

    def _write(self, name: str, data: str | bytes) -> None:
        Path(self.dir, name).write_bytes(data.encode() if isinstance(data, str) else data)

    def drop_index(self) -> None:
        try:
            os.unlink(self.index)
        except FileNotFoundError:
            pass

    def run(self, *args: str, cwd: str | None = None, data: bytes | None = None, ok: tuple[int, ...] = (0,)) -> bytes:
        """Git's standard output; GitRunError when it fails (exits with a status not in ``ok``)."""
        try:
            git = which("git")
            if git is None:
                raise OSError("git is not installed")
            done = subprocess.run([git, *args], cwd=cwd or self.repo.top, env=self.env, input=data,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_SECONDS,
                                  stdin=None if data is not None else subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitRunError(f"git {args[0]}: {exc}") from None
        if done.returncode not in ok:
            raise GitRunError(f"git {args[0]} exited {done.returncode}: "
                              f"{done.stderr.decode(errors='replace').strip()[:500]}")
        return done.stdout

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> IsolatedGit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- git's own trust boundary --------------------------------------------------------------
# What the user's own git obeys: a command or a tool that rewrote it would run its programs the
# next time the user runs git (or any editor does), outside every sandbox.

GIT_FOLDER = ".git"
ATTRIBUTES_FILE = ".gitattributes"


def in_git_folder(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names something inside (or is) a ``.git`` folder or file."""
    return GIT_FOLDER in Path(path).parts


def _dir_or_file(path: str) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode)


def guarded_paths(roots: list[Path]) -> list[str]:
    """What the sandbox keeps read-only inside the writable ``roots``: the ``.git`` of the
    repository holding each root and of each repository directly below it (a folder of
    clones), and the ``.gitattributes`` at their tops. Only what exists is listed."""
    found: list[str] = []
    tops: list[str] = []
    for root in roots:
        repo = find_repo(str(root))
        if repo is not None:
            tops.append(repo.top)
            if repo.common_dir != os.path.join(repo.top, GIT_FOLDER):  # a linked work tree's main repository
                found.append(repo.common_dir)
        try:
            with os.scandir(root) as entries:
                tops += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)
                         and os.path.lexists(os.path.join(entry.path, GIT_FOLDER))]
        except OSError:
            pass
    for top in dict.fromkeys(tops):
        found += [os.path.join(top, name) for name in (GIT_FOLDER, ATTRIBUTES_FILE)
                  if _dir_or_file(os.path.join(top, name))]
    inside = [str(root) for root in roots]
    return [p for p in dict.fromkeys(found)
            if any(p == r or p.startswith(r.rstrip(os.sep) + os.sep) for r in inside)]
