"""Choosing before an edit lands, through the real daemon: ``permission/request`` carries the text a
``write`` or ``edit`` would leave (the tools' own code computes it), and an answer's ``content``
is what gets written, with the model told what the user changed."""

import pytest

from editor import Editor
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results

CHANGED = "The user changed your edit before accepting it. What was written differs from your proposal:"


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def asked(d) -> dict:
    """The permission requests so far, by tool call id."""
    return {r["params"]["toolCallId"]: r["params"] for r in d.server_requests if r["method"] == "permission/request"}


def ends(d, n: int) -> dict:
    return {e["toolCallId"]: e for e in results(d, n)}


def tool_messages(server, n: int) -> list[str]:
    return [m["content"] for m in server.requests[n].body["messages"] if m["role"] == "tool"]


def test_a_write_and_an_edit_are_proposed_with_the_whole_text_they_would_leave(spawn, tmp_path, server):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n\nprint(add(1, 2))\n")
    server.script(calls(("w", "write", {"path": "new/notes.md", "content": "# Notes\n"})),
                  calls(("e", "edit", {"path": "app.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]})),
                  calls(("x", "edit", {"path": "app.py", "edits": [{"oldText": "not there", "newText": "y"}]})),
                  calls(("o", "write", {"path": "app.py", "content": "print(3)\n"})),
                  Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.on_request["permission/request"] = lambda params: {"outcome": "allow_once"}
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "fix add"})
    d.wait_event("agent_settled", timeout=30)
    requests = asked(d)
    assert requests["w"]["proposed"] == {"path": str(tmp_path / "new" / "notes.md"), "text": "# Notes\n",
                                         "exists": False}
    assert requests["e"]["proposed"] == {"path": str(tmp_path / "app.py"), "exists": True,
                                         "text": "def add(a, b):\n    return a + b\n\nprint(add(1, 2))\n"}
    assert "proposed" not in requests["x"]  # it would fail: nothing to show, and it fails once allowed
    assert requests["o"]["proposed"] == {"path": str(tmp_path / "app.py"), "text": "print(3)\n", "exists": True}
    finished = ends(d, 4)
    assert finished["x"]["isError"] and "oldText was not found" in finished["x"]["result"]["content"][0]["text"]
    assert not any(finished[i]["isError"] for i in "weo")
    assert not any((finished[i]["result"].get("details") or {}).get("userEdited") for i in "weo")
    assert (tmp_path / "app.py").read_text() == "print(3)\n"


def test_the_users_version_is_written_and_the_model_is_told_what_changed(spawn, tmp_path, server):
    (tmp_path / "app.py").write_text("one = 1\ntwo = 2\nthree = 3\n")
    server.script(
        calls(("e", "edit", {"path": "app.py", "edits": [{"oldText": "one = 1", "newText": "one = 'I'"},
                                                          {"oldText": "three = 3", "newText": "three = 'III'"}]})),
        calls(("w", "write", {"path": "b.txt", "content": "model's\n"})),
        calls(("r", "write", {"path": "c.txt", "content": "model's\n"})),
        calls(("s", "bash", {"command": "echo ran"})),
        Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    # the first hunk taken, the second rejected, and a line written by hand
    mine = "one = 'I'\ntwo = 2\nthree = 3\n# checked by hand\n"
    long = "user's\n" + "".join(f"line {n}\n" for n in range(300))
    answers = {"e": {"outcome": "allow_once", "content": mine},
               "w": {"outcome": "allow_once", "content": long},
               "r": {"outcome": "reject_once", "content": "never written\n"},
               "s": {"outcome": "allow_once", "content": "ignored for a command\n"}}
    d.on_request["permission/request"] = lambda params: answers[params["toolCallId"]]
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "spell the numbers"})
    d.wait_event("agent_settled", timeout=30)
    assert (tmp_path / "app.py").read_text() == mine
    assert (tmp_path / "b.txt").read_text() == long
    assert not (tmp_path / "c.txt").exists()
    finished = ends(d, 4)
    edit = finished["e"]["result"]
    text = edit["content"][0]["text"]
    assert CHANGED in text and "-three = 'III'\n+three = 3\n+# checked by hand" in text
    assert edit["details"]["userEdited"] is True
    assert "+one = 'I'" in edit["details"]["diff"] and "+# checked by hand" in edit["details"]["diff"]
    assert "-three = 3" not in edit["details"]["diff"]  # the file's diff is what was written
    assert finished["w"]["result"]["details"]["userEdited"] is True
    written = finished["w"]["result"]["content"][0]["text"]
    assert "-model's\n+user's" in written and "+line 194\n" in written and "+line 195" not in written
    assert written.endswith("[105 more diff lines not shown]")  # 200 of the diff's 305 lines
    assert finished["r"]["isError"] and "declined" in finished["r"]["result"]["content"][0]["text"]
    assert not finished["s"]["isError"] and "ran" in finished["s"]["result"]["content"][0]["text"]
    # the model reads what the user changed in the next request
    told = tool_messages(server, 1)
    assert any(CHANGED in m and "+# checked by hand" in m for m in told)
    # the turn diff records what was written
    diff = d.call("changes/get")
    assert any(f["path"].endswith("app.py") and "+# checked by hand" in f["diff"] for f in diff["files"])


def test_the_proposal_comes_from_the_editors_buffer_and_the_users_version_goes_back_through_it(
        spawn, tmp_path, server):
    (tmp_path / "app.py").write_text("value = 'disk'\n")
    server.script(calls(("e", "edit", {"path": "app.py", "edits": [{"oldText": "unsaved", "newText": "model"}]})),
                  Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.on_request["permission/request"] = lambda params: {"outcome": "allow_once", "content": "value = 'mine'\n"}
    editor = Editor(d, permissions=True)
    editor.open(tmp_path / "app.py", "value = 'unsaved'\n")
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert asked(d)["e"]["proposed"]["text"] == "value = 'model'\n"
    assert editor.text(tmp_path / "app.py") == "value = 'mine'\n"
    assert (tmp_path / "app.py").read_text() == "value = 'disk'\n"  # in the editor, not saved behind its back
    result = ends(d, 1)["e"]["result"]
    assert result["details"]["userEdited"] is True and "-value = 'model'\n+value = 'mine'" in \
        result["content"][0]["text"]


def test_a_content_that_is_not_text_cancels_and_writes_nothing(spawn, tmp_path, server):
    server.script(calls(("n", "write", {"path": "n.txt", "content": "model's\n"})),
                  calls(("l", "write", {"path": "l.txt", "content": "model's\n"})),
                  Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    answers = {"n": {"outcome": "allow_once", "content": 5},
               "l": {"outcome": "allow_once", "content": ["user's\n"]}}
    d.on_request["permission/request"] = lambda params: answers[params["toolCallId"]]
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    finished = ends(d, 2)
    for call in "nl":
        assert finished[call]["isError"] and "cancelled" in finished[call]["result"]["content"][0]["text"]
    assert not (tmp_path / "n.txt").exists() and not (tmp_path / "l.txt").exists()


def test_what_the_users_version_broke_is_reported_as_an_edits_would_be(spawn, tmp_path, server):
    (tmp_path / "app.py").write_text("x = 1\n")
    server.script(calls(("e", "edit", {"path": "app.py", "edits": [{"oldText": "x = 1", "newText": "x = 2"}]})),
                  Reply(body=openai_text("done")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.on_request["permission/request"] = lambda params: {"outcome": "allow_once", "content": "x = y\n"}
    undefined = {"range": {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 5}},
                 "severity": 1, "source": "Pyright", "message": '"y" is not defined'}
    reports = iter([[], [undefined]])  # before the change, after it
    d.on_request["editor/diagnostics"] = lambda params: {"items": [{"uri": params["uris"][0],
                                                                    "diagnostics": next(reports)}]}
    d.call("initialize", {"capabilities": {"permissions": True, "languageFeatures": {"diagnostics": True}}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    result = ends(d, 1)["e"]["result"]
    assert (tmp_path / "app.py").read_text() == "x = y\n"
    assert CHANGED in result["content"][0]["text"] and result["details"]["userEdited"] is True
    assert "This change introduced 1 error(s)" in result["content"][-1]["text"]
    assert result["details"]["introduced"][0]["message"] == '"y" is not defined'
