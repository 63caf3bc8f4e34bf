"""What an ACP client shows of a session after a compaction and after reopening it, through the
real ``pi-daemon --acp``: the title stays the one ``session/list`` gives, and the context in use is
the session's, read from its file (with its load index, as a daemon with a lasting home has it)."""

from __future__ import annotations

import tempfile

import pytest

from client import clean_env
from lines import Lines
from test_acp_lifecycle import new_session, prompt, start, text, ws  # noqa: F401 (ws: the fixture)


def finish(daemon: Lines) -> None:
    """Stop as an editor does, by closing the daemon's input: it closes its files (and writes their indexes)."""
    assert daemon.proc.stdin is not None
    daemon.proc.stdin.close()
    assert daemon.proc.wait(30) == 0


def titles(daemon: Lines, session_id: str) -> list[str]:
    return [u["title"] for u in daemon.updates(session_id) if u["sessionUpdate"] == "session_info_update"]


def test_the_prompt_after_a_compaction_does_not_rename_the_session(ws):
    daemon = start(ws, [text("first answer"), text("second answer"), text("THE SUMMARY"), text("third answer")])
    session_id = new_session(daemon, ws)
    prompt(daemon, session_id, "the first question")
    prompt(daemon, session_id, "more")
    assert prompt(daemon, session_id, "/compact")["result"]["stopReason"] == "end_turn"
    assert prompt(daemon, session_id, "the question after the compaction")["result"]["stopReason"] == "end_turn"
    listed = daemon.request("session/list", {})["result"]["sessions"]
    assert [s["title"] for s in listed] == ["the first question"]
    assert titles(daemon, session_id) == ["the first question"]
    finish(daemon)


@pytest.mark.parametrize("method", ["session/load", "session/resume"])
def test_usage_right_after_reopening_is_the_context_in_use(ws, method):
    env = clean_env(tempfile.mkdtemp(prefix="pi-daemon-home-"))  # one home: the second daemon trusts the index
    first = start(ws, [text("first answer"), text("second answer")], env=env)
    session_id = new_session(first, ws)
    prompt(first, session_id, "one " * 200)
    prompt(first, session_id, "two")
    live = [u for u in first.updates(session_id) if u["sessionUpdate"] == "usage_update"][-1]
    finish(first)
    assert list((ws / ".pi" / "sessions").glob("*.jsonl.index")), "the first daemon wrote no load index"

    second = start(ws, env=env)
    answer = second.request(method, {"sessionId": session_id, "cwd": str(ws), "mcpServers": []})
    assert "result" in answer, answer
    reopened = [u for u in second.updates(session_id) if u["sessionUpdate"] == "usage_update"]
    assert [u["used"] for u in reopened] == [live["used"]]
    finish(second)
