"""The git snapshot of a workspace (what ``bash`` changed): its before-contents are read by
blob id with one ``cat-file --batch``, a committed one is named by its blob id (so it need not
be copied), and the user's index is never touched. Each test runs on both ways of taking one:
the full read of the worktree, and the watched tree (a base read once, the kernel's file
events since) — they must say the same."""

import os
import subprocess

import pytest

from helpers import git, git_repo
from pi_daemon.worktree import watched_snapshot
from pi_daemon.worktree.snapshot import GitSnapshot, read_git_blobs
from pi_daemon.worktree.watched_snapshot import WatchSnapshot, take


@pytest.fixture(params=["full", "watched"])
def snapshot_of(request):
    """Takes a snapshot the way the test's parameter says (the watched way: its base read at the
    first snapshot, as the first command of a daemon's life does)."""
    def take_one(root):
        if request.param == "full":
            return GitSnapshot.take(str(root))
        tree = watched_snapshot.watched(str(root))
        assert tree is not None
        snap = tree.snapshot()
        assert isinstance(snap, WatchSnapshot)
        return snap
    yield take_one
    watched_snapshot.close_all()


def blob_id(cwd, path: str) -> str:
    return subprocess.run(["git", "rev-parse", f"HEAD:{path}"], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def test_blobs_are_read_by_id_in_one_batch_and_unknown_ids_are_left_out(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "dir" / "b.txt").write_text("b\n" * 1000)
    git_repo(tmp_path)
    a, b = blob_id(tmp_path, "a.txt"), blob_id(tmp_path, "dir/b.txt")
    tree = blob_id(tmp_path, "dir")  # a tree, not a blob
    found = read_git_blobs(str(tmp_path), [a, tree, "0" * 40, b, a])
    assert found == {a: b"a\n", b: b"b\n" * 1000}
    assert read_git_blobs(str(tmp_path / "dir" / "nowhere"), [a]) == {}


def test_changes_since_the_last_call_follow_each_file(tmp_path, snapshot_of):
    (tmp_path / ".gitignore").write_text("/.pi/\n*.log\n")
    (tmp_path / ".pi").mkdir()
    (tmp_path / "kept.txt").write_text("one\n")
    git_repo(tmp_path)
    snap = snapshot_of(tmp_path)
    assert snap is not None
    kept = blob_id(tmp_path, "kept.txt")
    try:
        assert snap.changes() == []
        (tmp_path / "kept.txt").write_text("two\n")
        (tmp_path / "new.txt").write_text("new\n")
        (tmp_path / "run.log").write_text("ignored\n")
        (tmp_path / ".pi" / "state").write_text("the daemon's own\n")
        assert snap.changes() == [(str(tmp_path / "kept.txt"), b"one\n", kept), (str(tmp_path / "new.txt"), None, None)]
        assert snap.changes() == []  # nothing since
        os.unlink(tmp_path / "new.txt")
        assert snap.changes() == [(str(tmp_path / "new.txt"), None, None)]
        (tmp_path / "kept.txt").write_text("one\n")  # back as it was: its before-content is still known
        os.utime(tmp_path / "kept.txt", ns=(1, 1))
        assert snap.changes() == [(str(tmp_path / "kept.txt"), b"one\n", kept)]
    finally:
        snap.close()


def test_only_a_committed_before_content_is_named_by_its_blob_id(tmp_path, snapshot_of):
    for name in ("committed", "staged", "dirty", "gone"):
        (tmp_path / f"{name}.txt").write_text(f"{name}\n")
    git_repo(tmp_path)
    (tmp_path / "staged.txt").write_text("staged, not committed\n")
    git(tmp_path, "add", "staged.txt")
    (tmp_path / "dirty.txt").write_text("dirty in the worktree\n")
    (tmp_path / "untracked.txt").write_text("never added\n")
    index = (tmp_path / ".git" / "index").read_bytes()
    snap = snapshot_of(tmp_path)
    assert snap is not None
    try:
        for name in ("committed", "staged", "dirty", "untracked", "gone"):
            (tmp_path / f"{name}.txt").write_text("changed by a command\n")
        os.unlink(tmp_path / "gone.txt")
        got = {os.path.basename(path): (before, ref) for path, before, ref in snap.changes()}
    finally:
        snap.close()
    assert got == {"committed.txt": (b"committed\n", blob_id(tmp_path, "committed.txt")),
                   "staged.txt": (b"staged, not committed\n", None),
                   "dirty.txt": (b"dirty in the worktree\n", None),
                   "untracked.txt": (b"never added\n", None),
                   "gone.txt": (b"gone\n", blob_id(tmp_path, "gone.txt"))}
    assert (tmp_path / ".git" / "index").read_bytes() == index


def test_before_any_commit_nothing_is_named_by_its_blob_id(tmp_path, snapshot_of):
    (tmp_path / "a.txt").write_text("a\n")
    git(tmp_path, "init", "-q")
    snap = snapshot_of(tmp_path)
    assert snap is not None
    try:
        (tmp_path / "a.txt").write_text("b\n")
        assert snap.changes() == [(str(tmp_path / "a.txt"), b"a\n", None)]
    finally:
        snap.close()


def test_a_workspace_below_the_repositorys_top_names_its_files_from_the_top(tmp_path, snapshot_of):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("outside the workspace\n")
    git_repo(tmp_path)
    snap = snapshot_of(tmp_path / "sub")
    assert snap is not None
    try:
        (tmp_path / "sub" / "a.txt").write_text("changed\n")
        (tmp_path / "b.txt").write_text("changed too\n")
        assert snap.changes() == [(str(tmp_path / "sub" / "a.txt"), b"a\n", blob_id(tmp_path, "sub/a.txt"))]
    finally:
        snap.close()


def test_a_linked_work_tree_and_a_submodule_are_snapshotted_with_their_repositorys_objects(tmp_path, snapshot_of):
    main = tmp_path / "main"
    main.mkdir()
    (main / "f.txt").write_text("one\n")
    git_repo(main)
    git(main, "worktree", "add", "-q", str(tmp_path / "linked"))
    (tmp_path / "super").mkdir()
    (tmp_path / "super" / "s.txt").write_text("s\n")
    git_repo(tmp_path / "super")
    git(tmp_path / "super", "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(main), "sub")
    for work_tree in (tmp_path / "linked", tmp_path / "super" / "sub"):
        assert (work_tree / ".git").is_file()
        snap = snapshot_of(work_tree)
        assert snap is not None
        try:
            (work_tree / "f.txt").write_text("two\n")
            assert snap.changes() == [(str(work_tree / "f.txt"), b"one\n", blob_id(main, "f.txt"))]
        finally:
            snap.close()


def test_a_git_file_naming_another_repository_is_not_followed(tmp_path):
    """A ``.git`` file is a pointer a repository can ship: to another repository of the user's,
    whose index and objects the snapshot would then report as this work tree's (deleted) files."""
    other = tmp_path / "other"
    other.mkdir()
    (other / "secret.txt").write_text("the other repository's secret\n")
    git_repo(other)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("a\n")
    (ws / ".git").write_text(f"gitdir: {other / '.git'}\n")
    snap = take(str(ws))
    try:
        assert not isinstance(snap, GitSnapshot)
        (ws / "a.txt").write_text("b\n")
        assert [path for path, _, _ in snap.changes()] == [str(ws / "a.txt")]
    finally:
        snap.close()
