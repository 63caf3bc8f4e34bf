"""Rewind through the real daemon: the conversation and the files go back together, a file
changed by hand is a conflict left alone, the abandoned branch can be returned to with its
files, and a rewind cut short by SIGKILL is reported and finished by the next one."""

import json

import pytest

from editor import Editor
from helpers import git_repo
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def start_project(tmp_path, server):
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "b.txt").write_text("one\n")
    (tmp_path / "gone.txt").write_text("to be removed\n")
    (tmp_path / "hand.txt").write_text("original\n")
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    server.script(
        Reply(body=openai_text("hello")),
        calls(("w", "write", {"path": "new.txt", "content": "created by the agent\n"}),
              ("e", "edit", {"path": "a.txt", "edits": [{"oldText": "beta", "newText": "BETA"}]})),
        calls(("b", "bash", {"command": "echo appended >> b.txt && rm gone.txt && echo agent > hand.txt"})),
        Reply(body=openai_text("all done")))
    return project(tmp_path, server)


def run_two_prompts(spawn, tmp_path, server):
    d = spawn("--model", "local/coder", "--yes", cwd=start_project(tmp_path, server))
    d.call("prompt", {"text": "say hello"})
    d.wait_event("agent_settled", timeout=30)
    d.call("prompt", {"text": "change the files"})
    d.wait_event("agent_settled", count=2, timeout=30)
    return d


def user_entry(d, text):
    tree = d.call("session/entries", {})["entries"]
    return next(e for e in tree if e["type"] == "message" and e["message"]["role"] == "user"
                and text in json.dumps(e["message"]["content"]))


AFTER_RUN = {"a.txt": "alpha\nBETA\n", "b.txt": "one\nappended\n", "new.txt": "created by the agent\n",
             "gone.txt": None}
BEFORE_RUN = {"a.txt": "alpha\nbeta\n", "b.txt": "one\n", "new.txt": None, "gone.txt": "to be removed\n",
              "hand.txt": "original\n"}


def on_disk(tmp_path, names):
    return {n: (tmp_path / n).read_text() if (tmp_path / n).exists() else None for n in names}


def texts(d):
    return [json.dumps(m["content"]) for m in d.call("getMessages", {})["messages"] if m["role"] == "user"]


def test_rewind_takes_back_writes_edits_and_a_commands_changes_and_returns_to_the_branch(spawn, tmp_path, server):
    d = run_two_prompts(spawn, tmp_path, server)
    assert on_disk(tmp_path, AFTER_RUN) == AFTER_RUN and (tmp_path / "hand.txt").read_text() == "agent\n"
    old_leaf = d.call("session/entries", {})["entries"][-1]["id"]
    (tmp_path / "hand.txt").write_text("changed by hand\n")  # after the run: a conflict, never overwritten
    second = user_entry(d, "change the files")

    preview = d.call("session/rewind", {"entryId": second["parentId"], "dryRun": True})
    assert preview["dryRun"] and {f["path"]: f["action"] for f in preview["files"]} == {
        "a.txt": "write", "b.txt": "write", "new.txt": "delete", "gone.txt": "create"}
    assert preview["conflicts"] == [{"path": "hand.txt", "reason": "it was changed since"}]
    assert on_disk(tmp_path, AFTER_RUN) == AFTER_RUN and len(texts(d)) == 2  # a dry run changes nothing

    done = d.call("session/rewind", {"entryId": second["parentId"]})
    assert not done["dryRun"] and done["leafId"] == second["parentId"]
    assert sorted(f["path"] for f in done["files"]) == ["a.txt", "b.txt", "gone.txt", "new.txt"]
    assert on_disk(tmp_path, AFTER_RUN) == {n: BEFORE_RUN[n] for n in AFTER_RUN}
    assert (tmp_path / "hand.txt").read_text() == "changed by hand\n"
    assert [c["path"] for c in done["conflicts"]] == ["hand.txt"]
    assert len(texts(d)) == 1 and "say hello" in texts(d)[0]

    back = d.call("session/rewind", {"entryId": old_leaf})  # the abandoned branch, files included
    assert on_disk(tmp_path, AFTER_RUN) == AFTER_RUN and len(texts(d)) == 2
    assert [c["path"] for c in back["conflicts"]] == ["hand.txt"]
    assert (tmp_path / "hand.txt").read_text() == "changed by hand\n"


def test_keep_moves_only_the_conversation_and_bad_requests_are_named(spawn, tmp_path, server):
    d = run_two_prompts(spawn, tmp_path, server)
    second = user_entry(d, "change the files")
    to_start = d.call("session/rewind", {"entryId": None, "dryRun": True})  # before the first message
    assert sorted(f["path"] for f in to_start["files"]) == ["a.txt", "b.txt", "gone.txt", "hand.txt", "new.txt"]
    kept = d.call("session/rewind", {"entryId": second["parentId"], "files": "keep"})
    assert kept["files"] == [] and on_disk(tmp_path, AFTER_RUN) == AFTER_RUN and len(texts(d)) == 1
    bad = d.request("session/rewind", {"entryId": "nope"})
    assert bad["error"]["code"] == -32602 and "params.entryId" in bad["error"]["message"]
    bad = d.request("session/rewind", {"entryId": second["id"], "files": "some"})
    assert bad["error"]["code"] == -32602 and "files" in bad["error"]["message"]


def test_a_rewind_cut_short_by_sigkill_is_reported_and_finished(spawn, tmp_path, server):
    first = run_two_prompts(spawn, tmp_path, server)
    session_id = first.call("getState", {})["sessionId"]
    target = user_entry(first, "change the files")["parentId"]
    first.proc.kill()
    first.proc.wait()

    d = spawn("--model", "local/coder", cwd=str(tmp_path))
    editor = Editor(d)
    answered = []

    def hold_the_second(params):  # the editor applies one file, then never answers: the daemon is killed there
        answered.append(params)
        return editor.apply_edit(params) if len(answered) == 1 else None

    d.on_request["workspace/applyEdit"] = hold_the_second
    d.call("session/load", {"sessionId": session_id})
    d.request_async("session/rewind", {"entryId": target})
    d.wait_server_request("workspace/applyEdit", 2, timeout=20)
    d.proc.kill()
    d.proc.wait()

    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    survivor = Editor(again)  # the editor outlived the daemon: its buffers hold the file already rewound
    survivor.buffers = editor.buffers
    again.call("session/load", {"sessionId": session_id})
    state = again.call("getState", {})
    assert state["pendingRewind"]["entryId"] == target
    assert sorted(state["pendingRewind"]["files"]) == ["a.txt", "b.txt", "gone.txt", "hand.txt", "new.txt"]
    assert len(texts(again)) == 1  # the leaf moved before any file was written
    finished = again.call("session/rewind", {"entryId": target})
    assert finished["conflicts"] == [] and len(finished["files"]) == 4  # the one already rewound is not redone
    seen = {n: survivor.text(tmp_path / n) if str(tmp_path / n) in survivor.buffers else
            (tmp_path / n).read_text() if (tmp_path / n).exists() else None for n in BEFORE_RUN}
    assert seen == BEFORE_RUN
    assert "pendingRewind" not in again.call("getState", {}) or again.call("getState", {})["pendingRewind"] is None


def test_an_editor_that_refuses_leaves_the_rewind_pending_until_it_is_finished(spawn, tmp_path, server):
    d = run_two_prompts(spawn, tmp_path, server)
    editor = Editor(d)
    editor.refuse = "the file is read-only in the editor"
    target = user_entry(d, "change the files")["parentId"]
    refused = d.request("session/rewind", {"entryId": target})
    assert refused["error"]["code"] == -32003 and "read-only in the editor" in refused["error"]["message"]
    assert d.call("getState", {})["pendingRewind"]["entryId"] == target
    editor.refuse = None
    finished = d.call("session/rewind", {"entryId": target})
    assert finished["conflicts"] == [] and len(finished["files"]) == 5
    assert d.call("getState", {}).get("pendingRewind") is None


def test_an_editor_that_ends_the_file_with_a_newline_is_no_conflict(spawn, tmp_path, server):
    server.script(calls(("w", "write", {"path": "x.txt", "content": "no newline"})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "write x"})
    d.wait_event("agent_settled", timeout=30)
    editor = Editor(d)
    editor.open(tmp_path / "x.txt", "no newline\n")  # as Neovim shows a file it will save with 'fixeol'
    done = d.call("session/rewind", {"entryId": None})
    assert done["conflicts"] == [] and done["files"] == [{"path": "x.txt", "action": "delete"}]
    assert not (tmp_path / "x.txt").exists()
