"""Reviewing a run's changes while the session runs, through the real daemon: the run that is
still going cannot be accepted, and a revert being written is never recorded as a change of
the run that starts meanwhile."""

import time

import pytest

from editor import apply_text_edits, path_of
from loopback import LoopbackServer, Reply, openai_text
from test_editor_fs import THREE, three_hunks, turn_diffs
from test_tools_e2e import calls, project


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def test_the_live_run_cannot_be_accepted_until_it_has_settled(spawn, tmp_path, server):
    (tmp_path / "f.txt").write_text(THREE)
    server.script(calls(("w", "write", {"path": "f.txt", "content": three_hunks(THREE)})),
                  Reply(body=openai_text("ok"), stall_after=0))  # the run stays live after its edit
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "rename three lines"})
    run_id = d.wait_event("turn_diff")["event"]["runId"]
    for params in ({}, {"runId": run_id}, {"runId": run_id, "files": [{"path": "f.txt"}]}):
        error = d.request("changes/accept", params)["error"]
        assert error["code"] == -32001 and error["message"].startswith(f"run {run_id} is still active"), error
    assert not any(h["accepted"] for h in d.call("changes/get", {})["files"][0]["hunks"])

    d.call("abort")
    d.wait_event("agent_settled")
    assert d.call("changes/accept", {"runId": run_id}) == {"runId": run_id, "accepted": 3}
    assert all(h["accepted"] for h in d.call("changes/get", {})["files"][0]["hunks"])


def _apply_on_disk(params: dict) -> dict:
    """The editor applies a workspace edit and saves it (only edits to existing files here)."""
    for change in params["edit"]["documentChanges"]:
        path = path_of(change["textDocument"]["uri"])
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(apply_text_edits(text, change["edits"]))
    return {"applied": True}


def test_a_revert_being_written_when_a_run_starts_is_not_the_runs_change(spawn, tmp_path, server):
    (tmp_path / "f.txt").write_text(THREE)
    server.script(calls(("w", "write", {"path": "f.txt", "content": three_hunks(THREE)})),
                  Reply(body=openai_text("ok")),
                  Reply(body=openai_text("nothing to do"), stall_after=0))  # the second run stays live
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.on_request["workspace/applyEdit"] = _apply_on_disk
    d.call("initialize", {"capabilities": {"fs": {"readTextFile": False, "applyEdit": True}}})
    d.call("prompt", {"text": "rename three lines"})
    d.wait_event("agent_settled")
    first, diffs = turn_diffs(d)[-1]["runId"], len(turn_diffs(d))
    assert (tmp_path / "f.txt").read_text() == three_hunks(THREE)

    d.on_request["workspace/applyEdit"] = lambda params: None  # the editor is slow to apply the revert
    revert = d.request_async("changes/revert", {"runId": first})
    held = d.wait_server_request("workspace/applyEdit", count=2)
    d.request_async("prompt", {"text": "and now?"})
    d.wait_event("agent_start", 2)
    time.sleep(0.3)  # the new run has had time to begin recording, if it were not waiting
    d.respond(held["id"], _apply_on_disk(held["params"]))
    assert len(d.wait_response(revert)["result"]["reverted"][0]["hunkIds"]) == 3
    d.wait_event("message_end", 5)  # four of the first run, then the second run's prompt: its answer is asked for
    d.call("abort")
    d.wait_event("agent_settled", 2)
    assert (tmp_path / "f.txt").read_text() == THREE

    assert len(turn_diffs(d)) == diffs  # the second run changed nothing
    got = d.call("changes/get", {})
    assert got["runs"] == [first] and got["files"] == []  # the revert is the first run's, and undid it
