"""The index beside a session file: a session opens from it without reading its entries, and
what it then holds is exactly what the file says, whatever became of the index."""

import json
import os

from pi_daemon.llm.faux import FauxProvider
from pi_daemon.llm.registry import Entry, ModelRegistry
from pi_daemon.session import load_index
from pi_daemon.session.manager import SessionManager
from test_compaction import fill


def stored(tmp_path, turns=30):
    """A closed session of ``turns`` tool turns, named; its file."""
    faux = FauxProvider()
    manager = SessionManager(ModelRegistry([Entry(faux.model())]), str(tmp_path), faux.model())
    session = manager.create(name="the long one")
    fill(session.store, turns)
    session.store.append("session_settings", mode="plan")
    path = session.store.path
    session.store.close()  # as the daemon closes its files when it stops: the index is written
    return faux, path


def load(tmp_path, faux, path):
    manager = SessionManager(ModelRegistry([Entry(faux.model())]), str(tmp_path), faux.model())
    session, stopped = manager.load(file=str(path))
    return manager, session, stopped


def test_a_session_opens_from_its_index_and_reads_its_entries_when_first_needed(tmp_path):
    faux, path = stored(tmp_path)
    assert load_index.index_path(path).is_file()
    _, session, stopped = load(tmp_path, faux, path)
    assert not session.store.read  # nothing of the conversation was read to open it
    assert session.agent.state.message_count == 90 and session.name == "the long one" and session.mode == "plan"
    assert stopped is True  # it ends on a tool result: the agent still owed an answer
    messages = session.messages  # the first prompt or a replay asks for them
    assert session.store.read and len(messages) == 90
    session.store.close()
    load_index.remove(path)
    _, full, full_stopped = load(tmp_path, faux, path)  # the same file read whole, without an index
    assert full.store.read and full.messages == messages and full_stopped == stopped
    assert full.store.entries == session.store.entries and full.store.leaf_id == session.store.leaf_id


def test_the_plan_of_a_session_opened_from_its_index_needs_no_reading(tmp_path):
    faux, path = stored(tmp_path, turns=2)
    _, session, _ = load(tmp_path, faux, path)
    steps = [{"step": "read the parser", "status": "completed"}, {"step": "fix the bug", "status": "in_progress"}]
    for n, plan in enumerate((steps[:1], steps)):  # the last successful update_plan is the plan
        session.store.append("message", message={
            "role": "toolResult", "toolCallId": f"p{n}", "toolName": "update_plan", "isError": False,
            "content": [{"type": "text", "text": "Plan updated"}], "details": {"entries": plan, "explanation": "why"},
            "timestamp": n})
    session.store.close()
    _, session, _ = load(tmp_path, faux, path)
    plan = session.plan.current  # what session/load's reply and getState say
    assert not session.store.read  # the file was not read for it
    assert [(e.step, e.status) for e in plan.entries] == [(s["step"], s["status"]) for s in steps]
    assert plan.explanation == "why"
    session.messages  # read now: the plan is the branch's, the same
    assert session.store.read and session.plan.current == plan


def test_appending_after_an_index_load_chains_under_the_leaf(tmp_path):
    faux, path = stored(tmp_path, turns=3)
    _, session, _ = load(tmp_path, faux, path)
    leaf = session.store.leaf_id  # asking for the leaf reads the file
    entry = session.store.append("message", message={"role": "user", "content": "more", "timestamp": 1})
    assert entry["parentId"] == leaf
    session.store.close()  # the file changed: the index is written anew
    _, again, _ = load(tmp_path, faux, path)
    assert not again.store.read and again.agent.state.message_count == 10
    assert again.messages[-1].content == "more"


def test_a_stale_damaged_or_foreign_index_is_not_used(tmp_path):
    faux, path = stored(tmp_path, turns=3)
    index = load_index.index_path(path)
    good = index.read_bytes()
    body = json.loads(good)
    body["facts"]["name"] = "forged"
    for bad in (b"garbage", good[:-5], json.dumps(body).encode()):  # damaged, cut, facts changed
        index.write_bytes(bad)
        _, session, _ = load(tmp_path, faux, path)
        assert session.store.read and session.name == "the long one"
        session.store.close()
        assert index.read_bytes() != bad  # written anew (in a thread of its own, done before it closes)
    index.write_bytes(good)
    with path.open("ab") as f:  # another process appends after the index was written
        f.write(json.dumps({"type": "session_info", "id": "x1", "timestamp": "t", "name": "renamed"}).encode() + b"\n")
    _, session, _ = load(tmp_path, faux, path)
    assert session.store.read and session.name == "renamed"
    session.store.close()


def test_an_index_marked_with_another_users_key_is_not_used(tmp_path, monkeypatch):
    faux, path = stored(tmp_path, turns=3)
    index = load_index.index_path(path)
    body = json.loads(index.read_bytes())
    del body["mark"]
    body["facts"]["name"] = "forged"
    body["facts"]["model"] = ["somewhere", "expensive"]
    body["mark"] = load_index._mark(os.urandom(32), body)  # a cloned repository's, made with its own key
    index.write_bytes(json.dumps(body).encode())
    _, session, _ = load(tmp_path, faux, path)
    assert session.store.read and session.name == "the long one" and session.model.provider == faux.model().provider
    session.store.close()


def test_the_index_is_never_followed_through_a_link_and_never_holds_the_conversation(tmp_path):
    faux, path = stored(tmp_path, turns=3)
    index = load_index.index_path(path)
    assert b"question 0" not in index.read_bytes()  # the conversation is only in the session file
    outside = tmp_path / "outside.txt"
    outside.write_bytes(index.read_bytes())
    index.unlink()
    index.symlink_to(outside)
    _, session, _ = load(tmp_path, faux, path)
    assert session.store.read  # a link is not read as an index
    session.store.append("message", message={"role": "user", "content": "more", "timestamp": 1})
    session.store.close()
    assert not index.is_symlink() and index.is_file()  # the link was replaced, not written through
    assert outside.read_bytes() != index.read_bytes()
