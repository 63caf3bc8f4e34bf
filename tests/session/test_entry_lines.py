"""A session file read a block at a time reads exactly as read whole, wherever the blocks cut it."""

import json
import os
import random

import pytest

from pi_daemon.session.entry_lines import HEAD_BYTES, LongLine, line_runs, parse

HEADER = json.dumps({"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/w"})


def entry(n: int, parent: str | None, text: str = "hello") -> str:
    return json.dumps({"type": "message", "id": f"e{n}", "parentId": parent, "timestamp": "t",
                       "message": {"role": "user", "content": text, "timestamp": n}})


BODY = "\n".join([
    HEADER, entry(1, None), "", "   ", '{"type":"message","id":"bro', entry(2, "e1", "x" * 300),
    '[1, 2]', '{"type":"message","id":"e3","parentId":"e2","timestamp":"t","message":{"role":"user",'
              '"content":"n","timestamp":123456789012345678901234567890}}', entry(4, "gone"),
]) + "\n"


@pytest.mark.parametrize("tail", ["", '{"torn', "garbled}\n", "garbled}\n" + '{"torn'])
def test_blocks_of_any_size_read_as_the_whole_file(tail):
    data = (BODY + tail).encode()
    whole = parse("f", [data])
    for size in (1, 2, 7, 64, 333):
        assert parse("f", [data[at:at + size] for at in range(0, len(data), size)]) == whole
    header, entries, good_end, lines, skipped = whole
    assert header["id"] == "s1" and [e["id"] for e in entries] == ["e1", "e2", "e3", "e4"]
    assert entries[2]["message"]["timestamp"] == 123456789012345678901234567890  # read exactly
    assert entries[3]["parentId"] == "e3"  # its parent is unknown: it hangs under the entry before it
    assert [s["line"] for s in skipped][:2] == [5, 7]
    # A torn last line and a garbled last line are cut off; a garbled line a torn one follows is set aside.
    kept = len("garbled}\n") if tail == 'garbled}\n{"torn' else 0
    assert good_end == len(BODY) + kept
    assert [s["line"] for s in skipped][2:] == ([10] if kept else [])


def test_a_file_without_a_header_line_is_refused():
    from pi_daemon.session.entry_lines import SessionFileError

    for data in (b"", b'{"type":"session"', b"hello\n"):
        with pytest.raises(SessionFileError):
            parse("f", [data[:3], data[3:]])


def expected_runs(data: bytes, cap: int) -> list:
    """What ``line_runs`` gives, from the file split whole: the bytes between long lines, each
    line with the newline before it, and each line longer than ``cap`` as a LongLine (its head:
    what was read of it when it passed the cap)."""
    out: list = [b""]
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, 1):
        if len(line) > cap:
            out += [LongLine(number, len(line), line[:min(HEAD_BYTES, cap + 1)]), b""]
        else:
            out[-1] += (b"\n" if number > 1 else b"") + line
    return [item for item in out if item != b""]


def test_line_runs_pass_over_long_lines_wherever_the_blocks_cut_them(tmp_path):
    rng = random.Random(37)
    for trial in range(300):
        lengths = [rng.choice([0, 1, 5, 40, 700, 2000, 5000]) for _ in range(rng.randint(0, 12))]
        data = b"\n".join(bytes(rng.choice(b"ab{") for _ in range(n)) for n in lengths)
        data += rng.choice([b"", b"\n"])
        path = tmp_path / f"f{trial}"
        path.write_bytes(data)
        block = rng.choice([1, 3, 64, 900])
        cap = block * rng.choice([1, 2, 5])
        fd = os.open(path, os.O_RDONLY)
        try:
            got = list(line_runs(fd, len(data), block, cap, numbered=True))
        finally:
            os.close(fd)
        runs: list = []
        for item in got:  # runs cut anywhere at a line's end: joined between long lines
            if isinstance(item, bytes) and runs and isinstance(runs[-1], bytes):
                assert item.startswith(b"\n")
                runs[-1] += item
            elif isinstance(item, LongLine):
                runs.append(item._replace(head=item.head[:cap + 1]))
            else:
                runs.append(item)
        assert runs == expected_runs(data, cap), (lengths, block, cap)
