"""The session file: header, tree, appends as whole lines, torn lines, locks, unknown data."""

import json

import pytest

from pi_daemon.session.rebuild import context_messages, interrupted, pending_queue
from pi_daemon.session.store import SessionFileError, SessionLocked, SessionStore


def lines(path):
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_create_writes_the_header_at_once_and_entries_form_a_tree(tmp_path):
    path = tmp_path / "sessions" / "s.jsonl"
    store = SessionStore.create(path, "sid", "/work")
    assert lines(path) == [store.header] and store.header["type"] == "session" and store.header["version"] == 3
    assert (tmp_path / "sessions" / ".gitignore").read_text() == "*\n"
    a = store.append("message", message={"role": "user", "content": "hi", "timestamp": 1})
    b = store.append("message", message={"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 2})
    q = store.append("queue_add", queueId="q1", kind="steer", message={"role": "user", "content": "x", "timestamp": 3})
    assert a["parentId"] is None and b["parentId"] == a["id"] and "parentId" not in q
    assert store.leaf_id == b["id"]  # side entries do not move the leaf
    assert [e["id"] for e in store.branch()] == [a["id"], b["id"]]
    store.set_leaf(a["id"])
    c = store.append("message", message={"role": "user", "content": "other branch", "timestamp": 4})
    assert c["parentId"] == a["id"] and [e["id"] for e in store.branch()] == [a["id"], c["id"]]
    store.close()
    reopened = SessionStore.open(path)
    assert reopened.leaf_id == c["id"] and [e["id"] for e in reopened.branch()] == [a["id"], c["id"]]
    assert all(line.endswith(b"\n") for line in path.read_bytes().splitlines(keepends=True))
    reopened.close()


def test_torn_last_line_is_cut_off_saved_aside_and_never_glued(tmp_path):
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(path, "sid", "/w")
    store.append("message", message={"role": "user", "content": "kept", "timestamp": 1})
    store.close()
    with open(path, "ab") as f:
        f.write(b'{"type":"message","id":"torn","parentId":null,"message":{"role":"assis')
    store = SessionStore.open(path)
    assert store.torn_file is not None and store.torn_file.read_bytes().startswith(b'{"type":"message","id":"torn"')
    store.append("message", message={"role": "user", "content": "after", "timestamp": 2})
    store.close()
    entries = lines(path)  # every line parses: nothing was glued to the torn bytes
    assert [e.get("message", {}).get("content") for e in entries[1:]] == ["kept", "after"]


def test_garbled_complete_last_line_is_cut_too(tmp_path):
    path = tmp_path / "s.jsonl"
    SessionStore.create(path, "sid", "/w").close()
    with open(path, "ab") as f:
        f.write(b'{"type":"message", garbage\n')
    store = SessionStore.open(path)
    assert store.torn_file is not None and len(lines(path)) == 1
    store.close()


def test_not_a_session_file_and_missing_file(tmp_path):
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    with pytest.raises(SessionFileError, match="not a pi-daemon session file"):
        SessionStore.open(tmp_path / "notes.jsonl")
    with pytest.raises(SessionFileError, match="no session file"):
        SessionStore.open(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_bytes(b"")
    with pytest.raises(SessionFileError):
        SessionStore.open(tmp_path / "empty.jsonl")


def test_a_second_writer_is_refused(tmp_path):
    path = tmp_path / "s.jsonl"
    first = SessionStore.create(path, "sid", "/w")
    with pytest.raises(SessionLocked, match="open in another process"):
        SessionStore.open(path)
    first.close()
    SessionStore.open(path).close()


def test_unknown_entry_types_and_roles_survive(tmp_path):
    path = tmp_path / "s.jsonl"
    store = SessionStore.create(path, "sid", "/w")
    store.close()
    future = [
        {"type": "message", "id": "e1", "parentId": None, "timestamp": "2026-01-01T00:00:00.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "hologram", "id": "e2", "parentId": "e1", "timestamp": "2026-01-01T00:00:01.000Z", "beam": [1, 2]},
        {"type": "message", "id": "e3", "parentId": "e2", "timestamp": "2026-01-01T00:00:02.000Z",
         "message": {"role": "oracle", "prophecy": "tests pass", "timestamp": 2}},
    ]
    with open(path, "a") as f:
        for entry in future:
            f.write(json.dumps(entry) + "\n")
    store = SessionStore.open(path)
    messages = context_messages(store)
    assert [m.role for m in messages] == ["user", "oracle"]
    store.append("message", message={"role": "assistant", "content": [], "stopReason": "stop", "timestamp": 3})
    store.close()
    assert lines(path)[1:4] == future  # untouched, in place


def test_pending_queue_and_interrupted(tmp_path):
    store = SessionStore.create(tmp_path / "s.jsonl", "sid", "/w")
    msg = {"role": "user", "content": "q", "timestamp": 1}
    for qid in ("q1", "q2", "q3"):
        store.append("queue_add", queueId=qid, kind="followUp", message=msg)
    store.append("message", message=msg, queueId="q1")  # delivered
    store.append("queue_done", queueId="q2", reason="cleared")
    assert [e["queueId"] for e in pending_queue(store)] == ["q3"]
    assert interrupted(context_messages(store))  # a user message with no answer
    store.close()
