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
Its environment is the fixed one of :func:`..guard.programs.environment` (no API keys), git
itself is found as :mod:`..guard.programs` says (never in a folder a command may write), and
each run has a time limit.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

from ..guard import programs
from ..guard.repositories import MAX_SMALL_BYTES, Repo, read_data

RUN_SECONDS = 120.0  # one git run: a FIFO among the objects, or a huge repository, cannot hold the daemon
MAX_INDEX_BYTES = 512 << 20
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


def _git() -> str:
    """The git the daemon runs (:mod:`pi_daemon.guard.programs`); OSError when there is none."""
    git = programs.which("git")
    if git is None:
        raise OSError(programs.missing("git"))
    return git


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
        self.env = programs.environment(
            self.dir, GIT_DIR=self.dir, GIT_WORK_TREE=repo.top, GIT_INDEX_FILE=self.index,
            GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null", GIT_ATTR_NOSYSTEM="1",
            GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", GIT_NO_REPLACE_OBJECTS="1")

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
            done = subprocess.run([_git(), *args], cwd=cwd or self.repo.top, env=self.env, input=data,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=RUN_SECONDS,
                                  stdin=None if data is not None else subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitRunError(f"git {args[0]}: {exc}") from None
        if done.returncode not in ok:
            raise GitRunError(f"git {args[0]} exited {done.returncode}: "
                              f"{done.stderr.decode(errors='replace').strip()[:500]}")
        return done.stdout

    def start(self, *args: str, cwd: str | None = None) -> subprocess.Popen[bytes]:
        """Git started with pipes to its standard input and output, to be asked more than once
        (the caller bounds its time); GitRunError when it cannot be started."""
        try:
            return subprocess.Popen([_git(), *args], cwd=cwd or self.repo.top, env=self.env, stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            raise GitRunError(f"git {args[0]}: {exc}") from None

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> IsolatedGit:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
