"""Damaged session files in the store: what is set aside, where the rest hangs, what stays on disk."""

import json

from pi_daemon.session.rebuild import context_messages
from pi_daemon.session.store import SessionStore


def write(path, *entries):
    header = {"type": "session", "version": 3, "id": "sid", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    lines = [e if isinstance(e, bytes) else json.dumps(e).encode() for e in (header, *entries)]
    path.write_bytes(b"\n".join(lines) + b"\n")


def user(entry_id, parent, content):
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": content, "timestamp": 1}}


def test_chains_of_set_aside_entries_move_children_and_the_leaf_up(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, user("a", None, "one"), user("b", "a", 5), user("c", "b", ["not a block"]), user("d", "c", "four"),
          {"type": "leaf", "targetId": "c"}, b"[1, 2]", {"type": "message", "parentId": "a"})
    before = path.read_bytes()
    store = SessionStore.open(path)
    assert [s["line"] for s in store.skipped] == [7, 8]  # a JSON array, a tree entry without an id
    messages = context_messages(store)  # the leaf was on c, which cannot be read: it moves to a
    assert [m.content for m in messages] == ["one"]
    assert [s["line"] for s in store.skipped] == [3, 4, 7, 8]
    assert store.by_id["d"]["parentId"] == "a" and store.leaf_id == "a"
    assert [e["id"] for e in store.branch("d")] == ["a", "d"]
    e = store.append("message", message={"role": "user", "content": "five", "timestamp": 2})
    assert e["parentId"] == "a"
    store.close()
    assert path.read_bytes().startswith(before)  # bad lines stay where they were


def test_an_unreadable_line_hands_its_children_to_the_entry_before_it(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, user("a", None, "one"), b'{"type":"message","id":"b","par', user("c", "b", "three"))
    store = SessionStore.open(path)
    assert store.skipped == [{"line": 3, "reason": "not valid JSON"}]
    assert [m.content for m in context_messages(store)] == ["one", "three"]
    store.close()


def test_a_read_only_open_never_cuts_a_torn_line(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, user("a", None, "one"))
    with open(path, "ab") as f:
        f.write(b'{"type":"mess')
    before = path.read_bytes()
    store = SessionStore.open(path, read_only="for the test")
    assert store.read_only == "for the test" and store.torn_file is None
    assert [e["id"] for e in store.branch()] == ["a"]
    store.close()
    assert path.read_bytes() == before and not list(tmp_path.glob("*.torn-*"))
