"""The walk's bounds hold for one wide level as for a deep chain."""

import os

from pi_daemon.guard.safe_open import open_root
from pi_daemon.guard.tree_walk import Skipped, walk_entries


def test_a_level_wider_than_the_walks_count_is_not_held_and_what_it_left_out_is_counted(tmp_path):
    for n in range(60):
        (tmp_path / f"d{n:02}").mkdir()
        (tmp_path / f"d{n:02}" / "f.txt").write_text("x")
    seen_levels = []
    skipped = Skipped()

    def keep(below):
        seen_levels.append(len(below))
        return below

    root_fd = open_root(str(tmp_path))
    try:
        files = [name for name, _ in walk_entries(root_fd, [""], keep, skipped=skipped, max_folders=10)]
    finally:
        os.close(root_fd)
    assert seen_levels == [10]  # the first level's 60 folders: only as many as can be entered are kept
    assert len(files) == 9  # the root and nine folders entered
    assert len(skipped.folders) + skipped.more == 51  # each folder not entered is counted
    assert all("past 10 folders" in why for why in skipped.folders.values())
