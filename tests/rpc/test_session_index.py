"""The index beside a session file, through the daemon: a session opened from it answers
exactly as a full read of the file does, and an index that no longer fits the file, is
damaged, or was made with another key (a cloned repository's) changes nothing the user sees."""

import json
import os
from pathlib import Path

from pi_daemon.session import load_index
from test_session_files import conversation, is_user, replace_line, user_texts


def opened(spawn, ws: Path, home: Path, sid: str) -> tuple[dict, list, object]:
    """A daemon with this home that loaded the session: (the load's answer, the messages, the daemon)."""
    d = spawn("--model", "faux/echo", cwd=str(ws), env={"home": str(home)})
    loaded = d.call("session/load", {"sessionId": sid})
    return loaded, d.call("getMessages")["messages"], d


def append_elsewhere(file: Path, text: str) -> None:
    """Another process adds a prompt under the last entry of the tree, and a name."""
    entries = [json.loads(line) for line in file.read_bytes().splitlines()[1:]]
    leaf = [e for e in entries if "parentId" in e][-1]["id"]
    with file.open("ab") as f:
        f.write(json.dumps({"type": "message", "id": "e1sewher", "parentId": leaf, "timestamp": "2026-01-01T00:00:00Z",
                            "message": {"role": "user", "content": text, "timestamp": 1}}).encode() + b"\n")
        f.write(json.dumps({"type": "session_info", "id": "e2sewher", "parentId": "e1sewher",
                            "timestamp": "2026-01-01T00:00:00Z", "name": "renamed elsewhere"}).encode() + b"\n")


def test_an_indexed_load_answers_as_the_full_read_and_the_session_goes_on(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    home = tmp_path / "home"
    full, messages, d = opened(spawn, ws, home, sid)
    assert d.close() == 0  # the load's index is written before the daemon lets the file go
    index = load_index.index_path(file)
    assert index.is_file() and b"first" not in index.read_bytes()  # the conversation stays in the file only
    indexed, again, d = opened(spawn, ws, home, sid)
    assert indexed == full and again == messages
    d.call("prompt", {"text": "fourth"})
    d.wait_event("agent_settled")
    assert user_texts(d) == ["first", "second", "third", "fourth"]
    assert d.close() == 0
    append_elsewhere(file, "from elsewhere")  # after the index was written at close
    loaded, messages, d = opened(spawn, ws, home, sid)
    assert loaded["state"]["messageCount"] == 9 and loaded["state"]["sessionName"] == "renamed elsewhere"
    assert [m["content"] for m in messages if m["role"] == "user"][-2:] == ["fourth", "from elsewhere"]
    assert d.close() == 0


def test_a_damaged_or_foreign_index_changes_nothing(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    home = tmp_path / "home"
    d = spawn("--model", "faux/echo", cwd=str(ws), env={"home": str(home)})
    d.call("session/load", {"sessionId": sid})
    d.call("session/setName", {"name": "the real name"})
    assert d.close() == 0
    index = load_index.index_path(file)
    load_index.remove(file)
    truth, messages, d = opened(spawn, ws, home, sid)  # read whole: no index
    assert d.close() == 0
    body = json.loads(index.read_bytes())
    del body["mark"]
    body["facts"].update(name="forged", messages=1, interrupted=True, model=["elsewhere", "costly"])
    body["mark"] = load_index._mark(os.urandom(32), body)  # made with another key, as a cloned repo's is
    for bad in (json.dumps(body).encode(), b"\x00garbage", index.read_bytes()[:40]):
        index.write_bytes(bad)
        loaded, again, d = opened(spawn, ws, home, sid)
        assert loaded == truth and again == messages
        assert loaded["state"]["sessionName"] == "the real name"
        assert d.close() == 0
        assert index.read_bytes() != bad  # written anew


def test_deleting_a_session_deletes_its_index(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path, prompts=("only",))
    d = spawn("--model", "faux/echo", cwd=str(ws), env={"home": str(tmp_path / "home")})
    d.call("session/load", {"sessionId": sid})
    d.call("session/close", {})
    assert load_index.index_path(file).is_file()
    d.call("session/delete", {"sessionId": sid})
    assert not file.exists() and not load_index.index_path(file).exists()
    assert d.close() == 0


def test_lines_set_aside_are_reported_the_same_from_the_index(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    entries = [json.loads(line) for line in file.read_bytes().splitlines()[1:]]
    answer = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "assistant"][-1]
    answer["message"]["content"] = 42  # a message that cannot be read
    replace_line(file, lambda e: e.get("id") == answer["id"], json.dumps(answer).encode())
    replace_line(file, is_user("second"), b'{"type":"message","id":"dead')  # not JSON
    home = tmp_path / "home"
    full, messages, d = opened(spawn, ws, home, sid)
    assert len(full["skipped"]) == 2
    assert d.close() == 0
    indexed, again, d = opened(spawn, ws, home, sid)
    assert indexed == full and again == messages
    assert d.close() == 0
