"""A session file read a block at a time reads exactly as read whole, wherever the blocks cut it."""

import json

import pytest

from pi_daemon.session.entry_lines import parse

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
