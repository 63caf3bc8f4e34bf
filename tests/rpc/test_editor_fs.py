"""The editor as the agent's file system, through the real daemon: unsaved buffers are read,
edits go through workspace/applyEdit, every run's changes are a reviewable, revertible diff."""

import json
import os
import subprocess

import pytest

from editor import Editor, apply_text_edits
from helpers import git_repo
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def tool_text(end: dict) -> str:
    return end["result"]["content"][0]["text"]


def turn_diffs(d) -> list[dict]:
    return [e["event"] for e in d.events if e["event"]["type"] == "turn_diff"]


def sent_tool_messages(server, n: int) -> list[str]:
    return [m["content"] for m in server.requests[n].body["messages"] if m["role"] == "tool"]


def test_a_dirty_buffer_is_what_read_returns_and_what_the_model_sees(spawn, tmp_path, server):
    (tmp_path / "app.py").write_text("print('on disk')\n")
    server.script(calls(("r", "read", {"path": "app.py"})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "app.py", "print('unsaved')\n")
    d.call("prompt", {"text": "what does app.py print?"})
    d.wait_event("agent_settled", timeout=30)
    assert "print('unsaved')" in tool_text(results(d)[0])
    assert any("print('unsaved')" in m for m in sent_tool_messages(server, 1))
    assert editor.reads[0]["path"] == str(tmp_path / "app.py") and editor.reads[0]["sessionId"]
    assert "line" not in editor.reads[0] and "limit" not in editor.reads[0]  # the whole buffer
    # a file the editor does not have open is read from the disk
    server.script(calls(("r2", "read", {"path": "other.txt"})), Reply(body=openai_text("ok")))
    (tmp_path / "other.txt").write_text("disk text\n")
    d.call("prompt", {"text": "and other.txt?"})
    d.wait_event("agent_settled", count=2, timeout=30)
    assert "disk text" in tool_text(results(d)[0])


def test_a_read_of_a_window_asks_the_editor_for_those_lines_only(spawn, tmp_path, server):
    (tmp_path / "long.py").write_text("".join(f"disk {n}\n" for n in range(1, 101)))
    server.script(calls(("r", "read", {"path": "long.py", "offset": 40, "limit": 3})),
                  calls(("r2", "read", {"path": "long.py", "offset": 99})),
                  calls(("r3", "read", {"path": "long.py", "offset": 500, "limit": 2})),
                  calls(("r4", "read", {"path": "disk.py", "offset": 2, "limit": 1})),
                  calls(("r5", "read", {"path": "paged.txt", "offset": 2, "limit": 1})),
                  Reply(body=openai_text("ok")))
    (tmp_path / "disk.py").write_text("one\ntwo\nthree\n")
    (tmp_path / "paged.txt").write_text("one\n\x0ctwo\nthree\n")
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "long.py", "".join(f"buffer {n}\n" for n in range(1, 101)))
    editor.open(tmp_path / "paged.txt", "ONE\n\x0ctwo\nthree\n")
    d.call("prompt", {"text": "read a part of long.py"})
    d.wait_event("agent_settled", timeout=30)
    window, tail, past, disk, paged = (tool_text(r) for r in results(d, 5))
    # one line more than shown is asked for: it tells the model whether the file goes on
    assert {k: editor.reads[0][k] for k in ("line", "limit")} == {"line": 40, "limit": 4}
    assert window.splitlines() == ["    40\tbuffer 40", "    41\tbuffer 41", "    42\tbuffer 42",
                                   "[Showing lines 40-42. Use offset=43 to read on.]"]
    assert editor.reads[1]["line"] == 99 and tail.splitlines() == ["    99\tbuffer 99", "   100\tbuffer 100"]
    assert past == "[offset 500 is past the end of the file]"
    # not open in the editor: the disk, paged by the daemon as without an editor
    assert editor.reads[3]["line"] == 2
    assert disk.splitlines() == ["     2\ttwo", "[Showing lines 2-2 of 3. Use offset=3 to read on.]"]
    # a form feed ends a line for the tool (str.splitlines), not for an editor: the whole buffer is read
    assert "line" not in editor.reads[-1] and "limit" not in editor.reads[-1]
    assert paged.splitlines() == ["     2\t", "[Showing lines 2-2 of 4. Use offset=3 to read on.]"]


def test_an_edit_is_one_workspace_apply_edit_against_the_buffer(spawn, tmp_path, server):
    disk = "a = 1\nb = 2\nc = 3\n"
    (tmp_path / "m.py").write_text(disk)
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [
        {"oldText": "b = 20", "newText": "b = 200"}, {"oldText": "c = 3", "newText": "c = 30"}]})),
        calls(("w", "write", {"path": "new.py", "content": "fresh\n"})),
        Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "m.py", "a = 1\nb = 20\nc = 3\n")  # unsaved: b = 20
    d.call("prompt", {"text": "change b and c"})
    d.wait_event("agent_settled", timeout=30)
    assert not any(e["isError"] for e in results(d, 2)), results(d, 2)
    first = editor.edits[0]
    assert len(first["edit"]["documentChanges"]) == 1
    doc = first["edit"]["documentChanges"][0]
    assert doc["textDocument"] == {"uri": (tmp_path / "m.py").as_uri(), "version": 1}
    assert apply_text_edits("a = 1\nb = 20\nc = 3\n", doc["edits"]) == "a = 1\nb = 200\nc = 30\n"
    assert editor.text(tmp_path / "m.py") == "a = 1\nb = 200\nc = 30\n"
    assert (tmp_path / "m.py").read_text() == disk  # saving is the user's choice
    created = editor.edits[1]["edit"]["documentChanges"]
    assert created[0]["kind"] == "create" and editor.text(tmp_path / "new.py") == "fresh\n"
    assert not (tmp_path / "new.py").exists()
    assert len(editor.edits) == 2
    last = turn_diffs(d)[-1]
    by_path = {f["path"]: f for f in last["files"]}
    assert by_path["m.py"]["status"] == "modified" and "-b = 20\n-c = 3\n+b = 200\n+c = 30\n" in by_path["m.py"]["diff"]
    assert by_path["new.py"]["status"] == "added"


def test_a_refused_edit_writes_nothing_and_the_model_is_told_why(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "m.py", "x = 1\n", dirty=False)
    editor.refuse = "the user rejected the change"
    d.call("prompt", {"text": "bump x"})
    d.wait_event("agent_settled", timeout=30)
    end = results(d)[0]
    assert end["isError"] and "the user rejected the change" in tool_text(end)
    assert "nothing was written" in tool_text(end)
    assert (tmp_path / "m.py").read_text() == "x = 1\n" and editor.text(tmp_path / "m.py") == "x = 1\n"
    assert any("the user rejected the change" in m for m in sent_tool_messages(server, 1))
    assert not turn_diffs(d)


def test_a_stale_edit_names_the_file_and_applies_nothing(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("one\ntwo\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [
        {"oldText": "one", "newText": "1"}, {"oldText": "two", "newText": "2"}]})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "m.py", "one\nTWO (typed by the user)\n")
    d.call("prompt", {"text": "number them"})
    d.wait_event("agent_settled", timeout=30)
    end = results(d)[0]
    assert end["isError"] and "m.py" in tool_text(end) and "edit 2" in tool_text(end)
    assert not editor.edits and editor.text(tmp_path / "m.py") == "one\nTWO (typed by the user)\n"


@pytest.mark.parametrize("with_git", [True, False], ids=["git", "no-git"])
def test_a_bash_rewrite_shows_up_in_turn_diff(spawn, tmp_path, server, with_git):
    (tmp_path / "data.txt").write_text("alpha\nbeta\n")
    (tmp_path / "gone.txt").write_text("bye\n")
    if with_git:
        (tmp_path / ".gitignore").write_text("/.pi/\n")
        index_before = git_repo(tmp_path)
    server.script(calls(("b", "bash", {"command": "sed -i s/beta/BETA/ data.txt && rm gone.txt && echo hi > new.txt"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "shout beta"})
    d.wait_event("agent_settled", timeout=30)
    files = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert set(files) == {"data.txt", "gone.txt", "new.txt"}
    assert "-beta\n+BETA\n" in files["data.txt"]["diff"] and files["data.txt"]["status"] == "modified"
    assert files["gone.txt"]["status"] == "deleted" and files["new.txt"]["status"] == "added"
    if with_git:  # the user's index is untouched, and nothing was staged or stashed
        assert (tmp_path / ".git" / "index").read_bytes() == index_before
        status = subprocess.run(["git", "stash", "list"], cwd=tmp_path, capture_output=True, text=True).stdout
        assert status == ""


def test_bash_changes_over_batches_in_git_follow_the_files_content(spawn, tmp_path, server):
    (tmp_path / "data.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".gitignore").write_text("/.pi/\n*.log\n")
    index_before = git_repo(tmp_path)
    server.script(calls(("b1", "bash", {"command": "echo gamma >> data.txt && echo x > made.txt && echo y > build.log"})),
                  calls(("b2", "bash", {"command": "printf 'alpha\\nbeta\\n' > data.txt && echo z >> made.txt"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "change and change back"})
    d.wait_event("agent_settled", timeout=30)
    first, second = ({f["path"]: f for f in event["files"]} for event in turn_diffs(d)[:2])
    # an ignored file is no change; a new one is added
    assert set(first) == {"data.txt", "made.txt"} and "+gamma\n" in first["data.txt"]["diff"]
    # put back as it was: no change any more; a file changed again shows both batches
    assert set(second) == {"made.txt"}
    assert second["made.txt"]["status"] == "added" and "+x\n+z\n" in second["made.txt"]["diff"]
    assert (tmp_path / ".git" / "index").read_bytes() == index_before


THREE = "".join(f"line {n}\n" for n in range(1, 31))


def three_hunks(text: str) -> str:
    return text.replace("line 2\n", "line two\n").replace("line 15\n", "line fifteen\n").replace(
        "line 28\n", "line twenty-eight\n")


def run_three_hunk_edit(spawn, tmp_path, server):
    (tmp_path / "f.txt").write_text(THREE)
    server.script(calls(("w", "write", {"path": "f.txt", "content": three_hunks(THREE)})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "rename three lines"})
    d.wait_event("agent_settled", timeout=30)
    return d


def test_revert_one_hunk_of_three_leaves_the_other_two(spawn, tmp_path, server):
    d = run_three_hunk_edit(spawn, tmp_path, server)
    got = d.call("changes/get", {})
    assert got["runId"] == turn_diffs(d)[-1]["runId"]
    hunks = got["files"][0]["hunks"]
    assert len(hunks) == 3 and [h["header"] for h in hunks] == [h["header"] for h in turn_diffs(d)[-1]["files"][0]["hunks"]]
    reply = d.call("changes/revert", {"runId": got["runId"], "files": [{"path": "f.txt", "hunkIds": [hunks[1]["id"]]}]})
    assert reply["reverted"] == [{"path": "f.txt", "hunkIds": [hunks[1]["id"]]}] and reply["conflicts"] == []
    text = (tmp_path / "f.txt").read_text()
    assert "line two\n" in text and "line 15\n" in text and "line twenty-eight\n" in text
    left = d.call("changes/get", {"runId": got["runId"]})["files"][0]["hunks"]
    assert [h["id"] for h in left] == [hunks[0]["id"], hunks[2]["id"]]  # ids stay while the hunk is untouched


def test_a_revert_of_lines_the_user_changed_is_a_conflict(spawn, tmp_path, server):
    d = run_three_hunk_edit(spawn, tmp_path, server)
    hunks = d.call("changes/get", {})["files"][0]["hunks"]
    edited = (tmp_path / "f.txt").read_text().replace("line fifteen\n", "line FIFTEEN, by hand\n")
    (tmp_path / "f.txt").write_text(edited)
    reply = d.call("changes/revert", {"runId": d.call("changes/get", {})["runId"]})
    assert [c["hunkId"] for c in reply["conflicts"]] == [hunks[1]["id"]]
    assert reply["reverted"] == [{"path": "f.txt", "hunkIds": [hunks[0]["id"], hunks[2]["id"]]}]
    assert (tmp_path / "f.txt").read_text() == THREE.replace("line 15\n", "line FIFTEEN, by hand\n")


def test_review_survives_sigkill_and_session_load(spawn, tmp_path, server):
    d = run_three_hunk_edit(spawn, tmp_path, server)
    got = d.call("changes/get", {})
    session_id = d.call("getState", {})["sessionId"]
    d.call("changes/accept", {"runId": got["runId"], "files": [{"path": "f.txt", "hunkIds": [got["files"][0]["hunks"][0]["id"]]}]})
    d.proc.kill()
    d.proc.wait()
    lines = [json.loads(x) for x in next((tmp_path / ".pi" / "sessions").glob("*.jsonl")).read_text().splitlines()]
    assert all(len(json.dumps(x)) < 2000 for x in lines if x.get("type") == "turn_changes")  # contents are blobs
    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    after = again.call("changes/get", {})
    assert after["runId"] == got["runId"] and after["files"][0]["diff"] == got["files"][0]["diff"]
    assert [h["accepted"] for h in after["files"][0]["hunks"]] == [True, False, False]
    reply = again.call("changes/revert", {"runId": got["runId"], "files": [{"path": "f.txt"}]})
    assert len(reply["reverted"][0]["hunkIds"]) == 3
    assert (tmp_path / "f.txt").read_text() == THREE


def test_revert_goes_through_the_editor_when_it_applies_edits(spawn, tmp_path, server):
    (tmp_path / "f.txt").write_text(THREE)
    server.script(calls(("w", "write", {"path": "f.txt", "content": three_hunks(THREE)})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    d.call("prompt", {"text": "rename three lines"})
    d.wait_event("agent_settled", timeout=30)
    assert editor.text(tmp_path / "f.txt") == three_hunks(THREE) and (tmp_path / "f.txt").read_text() == THREE
    got = d.call("changes/get", {})
    d.call("changes/revert", {"runId": got["runId"], "files": [{"path": "f.txt", "hunkIds": [got["files"][0]["hunks"][2]["id"]]}]})
    assert editor.text(tmp_path / "f.txt") == three_hunks(THREE).replace("line twenty-eight\n", "line 28\n")
    assert len(editor.edits) == 2


def test_unknown_runs_and_hunks_are_clear_errors(spawn, tmp_path, server):
    d = run_three_hunk_edit(spawn, tmp_path, server)
    assert "no run 'nope'" in d.request("changes/get", {"runId": "nope"})["error"]["message"]
    run_id = d.call("changes/get", {})["runId"]
    error = d.request("changes/revert", {"runId": run_id, "files": [{"path": "f.txt", "hunkIds": ["zzz"]}]})["error"]
    assert error["code"] == -32602 and "params.files[0].hunkIds" in error["message"]
    error = d.request("changes/accept", {"runId": run_id, "files": [{"path": "other.txt"}]})["error"]
    assert "did not change 'other.txt'" in error["message"]
    for method, params, field in (("changes/get", {"path": "../elsewhere.txt"}, "params.path"),
                                  ("changes/get", {"path": "/etc/passwd"}, "params.path"),
                                  ("changes/revert", {"files": [{"path": "/etc/passwd"}]}, "params.files[0].path"),
                                  ("changes/accept", {"files": [{"path": "f.txt"}, {"path": "a\0b"}]},
                                   "params.files[1].path")):
        error = d.request(method, {"runId": run_id, **params})["error"]
        assert error["code"] == -32602 and error["message"].startswith(f"invalid params: {field}: "), error
    assert (tmp_path / "f.txt").read_text() == three_hunks(THREE)
    assert not any(h["accepted"] for h in d.call("changes/get", {})["files"][0]["hunks"])


def test_editor_context_is_rendered_into_the_stored_user_message(spawn, tmp_path, server):
    (tmp_path / "src.py").write_text("def f():\n    return 1\n\ndef g():\n    return 2\n")
    server.script(Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "src.py", "def f():\n    return 10\n\ndef g():\n    return 2\n")
    d.call("prompt", {"text": "explain", "context": [
        {"path": "src.py", "range": {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}},
        {"path": "notes.md", "range": {"start": {"line": 4, "character": 0}, "end": {"line": 4, "character": 9}},
         "text": "a remark"}]})
    d.wait_event("agent_settled", timeout=30)
    user = server.requests[0].body["messages"][-1]["content"]
    assert user == ("explain\n\n[editor context]\nsrc.py lines 1-2:\n     1\tdef f():\n     2\t    return 10\n"
                    "notes.md line 5:\n     5\ta remark")
    stored = d.call("getMessages", {})["messages"][0]
    assert stored["content"] == user
    error = d.request("prompt", {"text": "x", "context": [{"path": "../outside.txt"}]})["error"]
    assert error["code"] == -32602 and "params.context[0].path" in error["message"]


def test_grep_searches_the_buffers_the_editor_reports_unsaved(spawn, tmp_path, server):
    (tmp_path / "a.py").write_text("needle = 'on disk'\nother\n")
    (tmp_path / "b.py").write_text("nothing here\n")
    server.script(calls(("g", "grep", {"pattern": "needle"})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "a.py", "other\nneedle = 'unsaved'\n")
    editor.open(tmp_path / "b.py", "a needle typed but not saved\n")
    d.notify("fs/didChangeDirty", {"paths": [str(tmp_path / "a.py"), "b.py"]})
    d.call("prompt", {"text": "find the needle"})
    d.wait_event("agent_settled", timeout=30)
    assert tool_text(results(d)[0]).splitlines() == ["a.py:2:needle = 'unsaved'", "b.py:1:a needle typed but not saved"]


def test_changes_get_gives_the_whole_texts_for_a_side_by_side_diff(spawn, tmp_path, server):
    d = run_three_hunk_edit(spawn, tmp_path, server)
    files = d.call("changes/get", {"path": "f.txt", "withContent": True})["files"]
    assert files[0]["before"] == THREE and files[0]["after"] == three_hunks(THREE)
    assert "before" not in d.call("changes/get", {})["files"][0]
    assert d.call("changes/get", {"path": "other.txt"})["files"] == []


def test_an_edit_the_buffer_outran_is_refused_by_version(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "m.py", "x = 1\n")

    def user_types(path):  # right after the daemon read the buffer, before its edit arrives
        buf = editor.buffers[path]
        buf[0], buf[1] = buf[0] + "# typed\n", buf[1] + 1
    editor.after_read = user_types
    d.call("prompt", {"text": "set x to 2"})
    d.wait_event("agent_settled", timeout=30)
    end = results(d)[0]
    assert end["isError"] and "m.py" in tool_text(end) and "stale" in tool_text(end)
    assert editor.edits[0]["edit"]["documentChanges"][0]["textDocument"]["version"] == 1
    assert editor.text(tmp_path / "m.py") == "x = 1\n# typed\n" and (tmp_path / "m.py").read_text() == "x = 1\n"


def test_confinement_comes_before_the_editor_is_asked(spawn, tmp_path, server):
    outside = tmp_path.parent / f"outside-{os.getpid()}.txt"
    outside.write_text("secret\n")
    server.script(calls(("r", "read", {"path": str(outside)}),
                        ("w", "write", {"path": ".pi/settings.json", "content": "{}"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(outside, "buffer of an outside file\n")
    d.call("prompt", {"text": "try"})
    d.wait_event("agent_settled", timeout=30)
    ends = {e["toolCallId"]: e for e in results(d, 2)}
    assert ends["r"]["isError"] and ends["w"]["isError"]
    assert editor.reads == [] and editor.edits == []


def test_a_bash_link_out_of_the_workspace_is_not_read_into_the_diff(spawn, tmp_path, server):
    outside = tmp_path.parent / f"secret-{os.getpid()}.txt"
    outside.write_text("TOP SECRET\n")
    server.script(calls(("b", "bash", {"command": f"ln -s {outside} link.txt && echo plain > plain.txt"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "link it"})
    d.wait_event("agent_settled", timeout=30)
    files = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert "plain.txt" in files and "TOP SECRET" not in json.dumps(turn_diffs(d))


def test_steer_and_follow_up_carry_editor_context_too(spawn, tmp_path):
    from client import text
    from test_runs import slow_script

    (tmp_path / "sel.py").write_text("a = 1\nb = 2\nc = 3\n")
    d = spawn("--faux-script", slow_script(tmp_path, [text("x" * 200), text("steered"), text("followed")]),
              "--model", "faux/slow", cwd=str(tmp_path))
    editor = Editor(d)
    editor.open(tmp_path / "sel.py", "a = 1\nb = 20\nc = 3\n")  # unsaved: b = 20
    d.call("prompt", {"text": "first"})
    d.wait_event("message_update", 3)
    line = {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 0}}
    d.call("steer", {"text": "look here", "context": [{"path": "sel.py", "range": line}]})
    d.call("followUp", {"text": "and this", "context": [{"path": "sel.py", "range": line, "text": "b = 2000"}]})
    d.wait_event("agent_settled", timeout=30)
    users = [m["content"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
    assert users == ["first",
                     "look here\n\n[editor context]\nsel.py line 2:\n     2\tb = 20",
                     "and this\n\n[editor context]\nsel.py line 2:\n     2\tb = 2000"]


def test_a_bash_result_names_the_files_unsaved_in_the_editor(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "typed.py").write_text("saved\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  calls(("b", "bash", {"command": "cat m.py"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    editor.open(tmp_path / "typed.py", "typed, not saved\n")
    d.notify("fs/didChangeDirty", {"paths": ["typed.py", str(tmp_path.parent / "elsewhere.py")]})
    d.call("prompt", {"text": "bump x and show it"})
    d.wait_event("agent_settled", timeout=30)
    edit, bash = results(d, 2)
    assert not edit["isError"] and editor.text(tmp_path / "m.py") == "x = 2\n"
    # the agent's edit is unsaved (the client has not said so yet): the command read the disk, and is told
    assert tool_text(bash) == ("x = 1\n\n[unsaved in the editor, so this command read them as last saved on the disk: "
                               "m.py, typed.py]")
    # what the model read says so too
    assert "m.py, typed.py]" in sent_tool_messages(server, 2)[-1]


def test_the_agents_edits_are_saved_before_its_command_runs(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "n.py").write_text("y = 1\n")
    (tmp_path / "typed.py").write_text("saved\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]}),
                        ("f", "edit", {"path": "n.py", "edits": [{"oldText": "y = 1", "newText": "y = 2"}]})),
                  calls(("b", "bash", {"command": "cat m.py n.py"})),
                  calls(("c", "bash", {"command": "cat m.py"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d, save=True)
    editor.open(tmp_path / "typed.py", "typed, not saved\n")
    editor.unsavable[str(tmp_path / "n.py")] = "the file is read-only"
    d.notify("fs/didChangeDirty", {"paths": ["typed.py"]})
    d.call("prompt", {"text": "bump x and y, then test"})
    d.wait_event("agent_settled", timeout=30)
    _, _, bash, again = results(d, 4)
    # only the agent's own edits were asked for, and the command read the saved one
    assert editor.saves[0]["paths"] == [str(tmp_path / "m.py"), str(tmp_path / "n.py")]
    assert (tmp_path / "m.py").read_text() == "x = 2\n" and (tmp_path / "typed.py").read_text() == "saved\n"
    assert tool_text(bash) == ("[saved before running: m.py]\n"
                               "[could not save before running: n.py (the file is read-only)]\n"
                               "x = 2\ny = 1\n\n[unsaved in the editor, so this command read them as last saved "
                               "on the disk: n.py, typed.py]")
    assert bash["result"]["details"]["savedFiles"] == ["m.py"]
    # a file saved once is not asked again; one that failed is
    assert editor.saves[1]["paths"] == [str(tmp_path / "n.py")]
    assert "savedFiles" not in again["result"]["details"]
    # undo still works in the editor: the save wrote the buffer, it did not replace it
    assert editor.text(tmp_path / "m.py") == "x = 2\n"


def test_without_the_save_capability_nothing_is_saved(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  calls(("b", "bash", {"command": "cat m.py"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    editor = Editor(d)
    d.call("prompt", {"text": "bump x"})
    d.wait_event("agent_settled", timeout=30)
    assert editor.saves == [] and tool_text(results(d, 2)[1]).startswith("x = 1\n")


def test_a_save_answer_of_another_shape_fails_the_save_not_the_command(spawn, tmp_path, server):
    (tmp_path / "m.py").write_text("x = 1\n")
    server.script(calls(("e", "edit", {"path": "m.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  calls(("b", "bash", {"command": "cat m.py"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    Editor(d, save=True)
    d.on_request["fs/save"] = lambda params: {"saved": 5, "failed": "no"}
    d.call("prompt", {"text": "bump x"})
    d.wait_event("agent_settled", timeout=30)
    bash = results(d, 2)[1]
    assert not bash["isError"] and tool_text(bash).startswith(
        "[could not save before running: m.py (the editor's fs/save answer has no saved and failed lists)]\nx = 1\n")
    assert d.call("getState")["sessionId"]  # still serving
