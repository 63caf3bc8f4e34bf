"""Hunks for review: the unified text diff -u would print, stable ids, reverting hunks."""

import difflib
import random

from pi_daemon.worktree.diffs import file_diff, revert_hunks

BASE = "".join(f"line {n}\n" for n in range(1, 41))


def test_applying_the_hunks_rebuilds_the_new_text():
    rng = random.Random(3)
    words = ["a\n", "b\n", "}\n", "\n", "x = 1\n", "return\n"] + [f"{n}\n" for n in range(12)]
    for _ in range(300):
        old = [rng.choice(words) for _ in range(rng.randrange(0, 60))]
        new = list(old)
        for _ in range(rng.randrange(0, 8)):
            k = rng.randrange(len(new) + 1)
            if rng.random() < 0.4 and new[k:]:
                del new[k]
            else:
                new.insert(k, rng.choice(words))
        diff = file_diff("f", "".join(old), "".join(new))
        applied = list(old)  # applying the hunks rebuilds the new text
        for hunk in reversed(diff.hunks):
            b1, b2, a1, a2 = hunk.changed
            applied[b1:b2] = new[a1:a2]
        assert applied == new


def test_statuses_and_no_newline_at_end():
    assert file_diff("n", None, "x\n").status == "added"
    assert file_diff("n", "x\n", None).status == "deleted"
    assert "\\ No newline at end of file" in file_diff("n", "x\n", "x").diff
    assert file_diff("n", "same\n", "same\n").diff == ""
    old, new = BASE.splitlines(True), three().splitlines(True)
    assert file_diff("f", BASE, three()).diff == "".join(difflib.unified_diff(old, new, "a/f", "b/f"))


def three():
    return BASE.replace("line 3\n", "line three\n").replace("line 20\n", "line twenty\n").replace(
        "line 37\n", "line thirty-seven\n")


def test_hunk_ids_stay_when_another_hunk_is_reverted():
    after = three()
    diff = file_diff("f", BASE, after)
    assert len(diff.hunks) == 3 and len({h.id for h in diff.hunks}) == 3
    assert [h.id for h in file_diff("f", BASE, after).hunks] == [h.id for h in diff.hunks]
    result = revert_hunks(BASE, after, after, diff, {diff.hunks[0].id})
    assert result.reverted == [diff.hunks[0].id] and not result.conflicts
    assert [h.id for h in file_diff("f", BASE, result.text).hunks] == [h.id for h in diff.hunks[1:]]


def test_revert_follows_lines_the_user_moved_and_refuses_lines_the_user_changed():
    after = three()
    diff = file_diff("f", BASE, after)
    current = "added on top\n" + after.replace("line twenty\n", "line TWENTY\n")
    result = revert_hunks(BASE, after, current, diff, None)
    assert [c[0] for c in result.conflicts] == [diff.hunks[1].id]
    assert result.text == "added on top\n" + BASE.replace("line 20\n", "line TWENTY\n")
