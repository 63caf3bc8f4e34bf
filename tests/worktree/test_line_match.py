"""The opcodes found from the texts are the reference's: same hunks, same hunk ids."""

import random

from pi_daemon.worktree import diffs
from pi_daemon.worktree.diffs import file_diff
from pi_daemon.worktree.line_match import opcodes, opcodes_of_texts


def check(a: str, b: str) -> bool:
    """Asserts the fast way agrees with the reference; False when it declined (None)."""
    old, new = a.splitlines(True), b.splitlines(True)
    fast = opcodes_of_texts(a, b)
    if fast is None:
        return False
    ops, old_lines, new_lines = fast
    assert ops == opcodes(old, new), (a, b)
    for tag, i1, i2, j1, j2 in ops:
        if tag != "equal" or i2 - i1 <= 8:
            assert old_lines(i1, i2) == old[i1:i2] and new_lines(j1, j2) == new[j1:j2], (a, b)
        for k in (max(i1 - 3, 0), i1), (i2, min(i2 + 3, len(old))):
            assert old_lines(*k) == old[k[0]:k[1]], (a, b)
    return True


def edit(rng: random.Random, lines: list[str], words: list[str]) -> list[str]:
    new = list(lines)
    for _ in range(rng.randrange(0, 6)):
        k = rng.randrange(len(new) + 1)
        what = rng.random()
        if what < 0.3 and k < len(new):
            del new[k:k + rng.randrange(1, 4)]
        elif what < 0.5 and k < len(new):
            new[k] = rng.choice(words)
        elif what < 0.65 and new:  # a line moved
            line = new.pop(rng.randrange(len(new)))
            new.insert(rng.randrange(len(new) + 1), line)
        elif what < 0.75:  # a copy of nearby lines
            new[k:k] = new[max(k - 3, 0):k]
        else:
            new[k:k] = [rng.choice(words) for _ in range(rng.randrange(1, 5))]
    return new


def test_random_edits_of_code_like_texts_give_the_reference_opcodes():
    rng = random.Random(12)
    used = 0
    for n in range(3000):
        # few distinct lines (many repeats: blank lines, braces) or mostly unique ones
        pool = [f"{k}\n" for k in range(rng.choice([3, 8, 40, 400]))] + ["\n", "}\n", "    return x\n"]
        old = [rng.choice(pool) for _ in range(rng.randrange(0, 80))]
        new = edit(rng, old, pool + ["new\n", "other\n"])
        a, b = "".join(old), "".join(new)
        if rng.random() < 0.2:  # no newline at the end of one or both
            a, b = a.rstrip("\n"), b if rng.random() < 0.5 else b.rstrip("\n")
        used += check(a, b)
    assert used > 2500  # the fast way decides nearly all of them


def test_long_files_with_few_edits_and_repeated_lines():
    rng = random.Random(5)
    used = 0
    for n in range(150):
        lines = [rng.choice(["\n", "    }\n", f"    value = compute({k})\n", "        pass\n"])
                 for k in range(rng.randrange(200, 3000))]
        new = edit(rng, lines, ["    }\n", "\n", "changed\n", "    value = compute(7)\n"])
        used += check("".join(lines), "".join(new))
    assert used > 100  # declined: a unique line moved from one changed region to another


def test_declines_other_line_breaks_and_file_diff_still_matches():
    assert opcodes_of_texts("a\r\nb\r\n", "a\r\nc\r\n") is None
    assert opcodes_of_texts("a\u2028b\n", "a\n") is None
    assert file_diff("f", "a\r\nb\r\n", "a\r\nc\r\n").diff == "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"


def test_a_file_changed_throughout_or_of_repeated_lines_takes_the_reference():
    lines = [f"line {n}\n" for n in range(400)]
    throughout = [line.upper() if n % 2 else line for n, line in enumerate(lines)]
    assert opcodes_of_texts("".join(lines), "".join(throughout)) is None  # a search per region
    same = ["x = 1\n"] * 600
    edited = same[:300] + ["y = 2\n"] + same[300:]
    assert opcodes_of_texts("".join(same), "".join(edited)) is None  # no anchor near the edit
    for old, new in ((lines, throughout), (same, edited)):  # the reference's hunks rebuild the new text
        rebuilt = list(old)
        for hunk in reversed(file_diff("f", "".join(old), "".join(new)).hunks):
            b1, b2, a1, a2 = hunk.changed
            rebuilt[b1:b2] = new[a1:a2]
        assert rebuilt == new


def test_file_diffs_have_the_reference_hunk_ids(monkeypatch):
    """What a stored run is read back with: hunks, ids and text as the reference gives them."""
    rng = random.Random(9)
    pairs = []
    for n in range(60):
        lines = [rng.choice(["\n", "    }\n", f"    item_{k} = compute({k})\n"]) for k in range(rng.randrange(50, 1500))]
        pairs.append(("".join(lines), "".join(edit(rng, lines, ["    }\n", "\n", "changed\n"]))))
    fast = [file_diff(f"f{n}.py", a, b) for n, (a, b) in enumerate(pairs)]
    monkeypatch.setattr(diffs, "opcodes_of_texts", lambda a, b: None)
    assert fast == [file_diff(f"f{n}.py", a, b) for n, (a, b) in enumerate(pairs)]
    assert sum(len(d.hunks) for d in fast) > 100
