"""The git snapshot of a workspace (what ``bash`` changed): its before-contents come from one
``cat-file --batch``, whatever the names ask for, and the user's index is never touched."""

import os

from helpers import git_repo
from pi_daemon.tools.snapshot import GitSnapshot


def test_before_contents_of_files_folders_and_missing_names_in_one_batch(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "dir" / "b.txt").write_text("b\n" * 1000)
    (tmp_path / "c d.txt").write_text("spaced\n")
    (tmp_path / "x 5").write_text("five\n")
    index = git_repo(tmp_path)
    snap = GitSnapshot.take(str(tmp_path))
    assert snap is not None
    try:
        names = [b"a.txt", b"dir", b"nope", b"c d.txt", b"dir/b.txt", b"x 5 missing", b"x 5", b"new\nline"]
        assert snap.before(names) == [b"a\n", None, None, b"spaced\n", b"b\n" * 1000, None, b"five\n", None]
    finally:
        snap.close()
    assert (tmp_path / ".git" / "index").read_bytes() == index


def test_changes_since_the_last_call_follow_each_file(tmp_path):
    (tmp_path / ".gitignore").write_text("/.pi/\n*.log\n")
    (tmp_path / ".pi").mkdir()
    (tmp_path / "kept.txt").write_text("one\n")
    git_repo(tmp_path)
    snap = GitSnapshot.take(str(tmp_path))
    assert snap is not None
    try:
        assert snap.changes() == []
        (tmp_path / "kept.txt").write_text("two\n")
        (tmp_path / "new.txt").write_text("new\n")
        (tmp_path / "run.log").write_text("ignored\n")
        (tmp_path / ".pi" / "state").write_text("the daemon's own\n")
        assert snap.changes() == [(str(tmp_path / "kept.txt"), b"one\n"), (str(tmp_path / "new.txt"), None)]
        assert snap.changes() == []  # nothing since
        os.unlink(tmp_path / "new.txt")
        assert snap.changes() == [(str(tmp_path / "new.txt"), None)]
    finally:
        snap.close()
