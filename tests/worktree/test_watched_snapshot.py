"""The watched work tree: a base read once, then the kernel's file events. What the user does
between runs is read into the next run's snapshot; what a command does, however it moves
folders about, is found from the names it touched; where events cannot be trusted the tree is
read in full again. Each case is checked against what a full read of the tree says."""

import os
import subprocess
import sys

import pytest

from helpers import git, git_repo
from pi_daemon.worktree import watched_snapshot
from pi_daemon.worktree.snapshot import GitSnapshot
from pi_daemon.worktree.watched_snapshot import WatchSnapshot, take


@pytest.fixture(autouse=True)
def _close_watches():
    yield
    watched_snapshot.close_all()


def changed(snap, root) -> dict:
    """Relative name -> (before, ref); a folder (a nested repository, which the full read lists
    and the run then leaves out) is left out here."""
    return {os.path.relpath(path, root): (before, ref) for path, before, ref in snap.changes()
            if os.path.islink(path) or not os.path.isdir(path)}


def both(root, act) -> tuple[dict, dict]:
    """What a watched snapshot and a full one, both taken now, say ``act`` changed."""
    watched = take(str(root))
    full = GitSnapshot.take(str(root))
    assert isinstance(watched, WatchSnapshot) and full is not None
    try:
        act()
        return changed(watched, root), changed(full, root)
    finally:
        watched.close()
        full.close()


def head_blob(root, name) -> str:
    return subprocess.run(["git", "rev-parse", f"HEAD:{name}"], cwd=root, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    (tmp_path / ".gitignore").write_text("/.pi/\nbuild/\n*.log\n")
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "src" / "pkg" / "b.py").write_text("b = 1\n")
    (tmp_path / "top.txt").write_text("top\n")
    git_repo(tmp_path)
    take(str(tmp_path)).close()  # the base is read now, as at a daemon's first command
    return tmp_path


def test_what_the_user_changed_between_runs_is_the_next_runs_before_content(repo):
    (repo / "src" / "a.py").write_text("a = 2  # the user's edit\n")
    (repo / "notes.txt").write_text("the user's new file\n")
    os.unlink(repo / "top.txt")
    (repo / "src" / "pkg").rename(repo / "src" / "lib")

    def command():
        for name in ("src/a.py", "notes.txt", "top.txt", "src/lib/b.py"):
            (repo / name).write_text("by the command\n")

    watched, full = both(repo, command)
    assert watched == full == {
        "notes.txt": (b"the user's new file\n", None),
        "src/a.py": (b"a = 2  # the user's edit\n", None),
        "src/lib/b.py": (b"b = 1\n", None),
        "top.txt": (None, None),
    }


def test_folders_a_command_makes_moves_and_deletes_are_followed(repo):
    def command():
        (repo / "new" / "deep" / "er").mkdir(parents=True)
        (repo / "new" / "deep" / "er" / "c.py").write_text("c\n")
        (repo / "new" / "d.py").write_text("d\n")
        (repo / "src" / "pkg").rename(repo / "moved")
        (repo / "moved" / "b.py").write_text("b = 2\n")
        subprocess.run(["rm", "-r", str(repo / "src")], check=True)

    watched, full = both(repo, command)
    b, a = head_blob(repo, "src/pkg/b.py"), head_blob(repo, "src/a.py")
    assert watched == full == {
        "moved/b.py": (None, None),
        "new/d.py": (None, None),
        "new/deep/er/c.py": (None, None),
        "src/a.py": (b"a = 1\n", a),
        "src/pkg/b.py": (b"b = 1\n", b),
    }


def test_a_folder_moved_in_from_outside_counts_and_one_moved_out_is_gone(repo, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (outside / "brought").mkdir()
    (outside / "brought" / "x.txt").write_text("x\n")

    def command():
        (outside / "brought").rename(repo / "brought")
        (repo / "src" / "pkg").rename(outside / "taken")
        (outside / "taken" / "b.py").write_text("changed outside: not this tree's any more\n")

    watched, full = both(repo, command)
    assert watched == full == {"brought/x.txt": (None, None),
                               "src/pkg/b.py": (b"b = 1\n", head_blob(repo, "src/pkg/b.py"))}


def test_ignored_folders_and_other_repositories_do_not_count(repo):
    def command():
        (repo / "build" / "out").mkdir(parents=True)
        (repo / "build" / "out" / "x.o").write_text("object\n")
        (repo / "run.log").write_text("log\n")
        (repo / "nested").mkdir()
        watched_snapshot.watched(str(repo)).watch.flush()  # watched already when it becomes a repository
        git(repo / "nested", "init", "-q")
        (repo / "nested" / "theirs.txt").write_text("another repository's\n")
        (repo / "src" / "a.py").write_text("a = 3\n")

    watched, full = both(repo, command)
    assert watched == full == {"src/a.py": (b"a = 1\n", head_blob(repo, "src/a.py"))}
    tree = watched_snapshot.watched(str(repo))
    assert tree is not None and "build" not in tree.watch.folders.values()


def test_a_changed_gitignore_makes_the_next_look_read_the_whole_tree(repo):
    (repo / "build").mkdir()
    (repo / "build" / "kept.txt").write_text("ignored until now\n")

    def command():
        (repo / ".gitignore").write_text("/.pi/\n*.log\n")  # build/ counts from now on
        (repo / "build" / "kept.txt").write_text("changed\n")

    watched, full = both(repo, command)
    assert watched == full == {".gitignore": (b"/.pi/\nbuild/\n*.log\n", head_blob(repo, ".gitignore")),
                               "build/kept.txt": (None, None)}
    # the next run watches build/ (the tree was walked again) and its snapshot has the new file
    watched, full = both(repo, lambda: (repo / "build" / "kept.txt").write_text("again\n"))
    assert watched == full == {"build/kept.txt": (b"changed\n", None)}


def test_a_symlink_is_kept_as_its_target_never_read_through(repo, tmp_path_factory):
    secret = tmp_path_factory.mktemp("home") / "secret"
    secret.write_text("a key\n")
    os.symlink(secret, repo / "link")  # made between runs: read into the next snapshot

    def command():
        os.unlink(repo / "link")
        (repo / "link").write_text("a file now\n")

    watched, full = both(repo, command)
    assert watched == full == {"link": (os.fsencode(secret), None)}


def test_the_watched_folder_going_away_falls_back_to_reading_in_full(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    git_repo(ws)
    take(str(ws)).close()
    ws.rename(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").rename(ws)  # the same path, but the watch was on the folder that moved
    snap = take(str(ws))
    try:
        assert isinstance(snap, GitSnapshot)
        (ws / "a.txt").write_text("b\n")
        assert changed(snap, ws) == {"a.txt": (b"a\n", head_blob(ws, "a.txt"))}
    finally:
        snap.close()


def test_taking_a_snapshot_does_not_read_the_unchanged_tree(repo):
    """The second run's snapshot reads the one file the user changed, not the tree."""
    (repo / "src" / "a.py").write_text("a = 4\n")
    tree = watched_snapshot.watched(str(repo))
    assert tree is not None
    base = tree.base
    snap = take(str(repo))
    try:
        assert snap.base is base  # not read again
        assert snap.overlay == {"src/a.py": b"a = 4\n"}
    finally:
        snap.close()


def test_a_tree_with_more_folders_than_its_share_of_watches_is_read_in_full_each_run(tmp_path, monkeypatch):
    """The user's watches are shared with the editor and other tools: past the daemons' budget
    the work tree is not watched, and every run reads it in full (still right)."""
    monkeypatch.setenv("PI_DAEMON_INOTIFY_WATCHES", "3")  # three folders' worth
    for name in ("a", "b", "c", "d"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.txt").write_text(f"{name}\n")
    git_repo(tmp_path)
    for run in range(2):
        snap = take(str(tmp_path))
        try:
            assert isinstance(snap, GitSnapshot)
            (tmp_path / "d" / "f.txt").write_text(f"changed by run {run}\n")
            assert list(changed(snap, tmp_path)) == ["d/f.txt"]
        finally:
            snap.close()
    assert watched_snapshot.watched(str(tmp_path)) is None


def test_past_its_bound_of_kept_names_the_base_is_read_again(repo, monkeypatch):
    """What the user changes between runs is held in memory up to a bound; past it the worktree
    is read again into a new base, and the snapshot still says what the files held."""
    monkeypatch.setattr(watched_snapshot, "MAX_OVERLAY", 3)
    tree = watched_snapshot.watched(str(repo))
    assert tree is not None
    first = tree.base
    for n in range(4):
        (repo / f"user{n}.txt").write_text(f"the user's file {n}\n")
    watched, full = both(repo, lambda: [(repo / f"user{n}.txt").write_text("by the command\n") for n in range(4)])
    assert tree.base is not first and tree.overlay == {}
    assert watched == full == {f"user{n}.txt": (f"the user's file {n}\n".encode(), None) for n in range(4)}


def test_a_folder_swapped_for_a_symlink_is_never_read_or_watched_through(repo, tmp_path_factory):
    """A command (or anything between runs) can put a symlink where a watched folder was: what
    it leads to (here a secret outside the workspace) is neither read into a snapshot nor
    watched; git, too, sees only the symlink."""
    outside = tmp_path_factory.mktemp("outside")
    (outside / "b.py").write_text("a secret\n")
    (repo / "src" / "pkg").rename(repo / "pkg.old")
    os.symlink(outside, repo / "src" / "pkg")
    watched, full = both(repo, lambda: (repo / "pkg.old" / "b.py").write_text("changed\n"))
    assert watched == full == {"pkg.old/b.py": (b"b = 1\n", None)}
    tree = watched_snapshot.watched(str(repo))
    assert tree is not None
    assert tree.overlay["src/pkg"] == os.fsencode(outside) and tree.overlay["src/pkg/b.py"] is None
    assert not any(b"secret" in v for v in tree.overlay.values() if isinstance(v, bytes))
    (outside / "b.py").write_text("a secret, changed\n")
    watched, full = both(repo, lambda: (outside / "new.py").write_text("another secret\n"))
    assert watched == full == {}


def test_a_killed_daemons_private_git_folder_is_removed_by_the_next(tmp_path):
    """A base is kept for the daemon's life, in a private git folder the daemon removes when it
    stops; one a killed daemon left is removed when another starts watching."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    git_repo(ws)
    script = ("import os, sys\nfrom pi_daemon.worktree import watched_snapshot\n"
              "tree = watched_snapshot.watched(sys.argv[1])\nprint(tree.base.git.dir, flush=True)\n"
              "sys.stdin.read()\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(ws)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    left = child.stdout.readline().strip()
    assert os.path.isdir(left)
    child.kill()  # SIGKILL: no atexit
    child.wait()
    assert os.path.isdir(left)
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("b\n")
    git_repo(other)
    assert watched_snapshot.watched(str(other)) is not None
    assert not os.path.exists(left)
