"""``session/search`` through the daemon: what was said in any of the workspace's sessions,
found by its text, newest session first, with where it is."""

from agent_shell import bash_call, script


def test_search_finds_what_was_said_in_any_session_newest_first(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    d.call("prompt", {"text": "Where is the Parser class defined?"})
    d.wait_event("agent_settled")
    first = d.call("getState")["sessionId"]
    d.call("session/new")
    d.call("prompt", {"text": "rename the parser module, café included"})
    d.wait_event("agent_settled", count=2)
    second = d.call("getState")["sessionId"]

    found = d.call("session/search", {"query": "PARSER"})
    assert not found["truncated"]
    sessions = [m["sessionId"] for m in found["matches"]]
    assert sessions[0] == second and first in sessions  # newest session first
    user = next(m for m in found["matches"] if m["sessionId"] == first and m["role"] == "user")
    assert user["snippet"] == "Where is the Parser class defined?" and user["firstMessage"].startswith("Where is")
    # the entry is the one to open the session at
    entries = d.call("session/entries", {"sessionId": first})["entries"]
    assert any(e["id"] == user["entryId"] for e in entries)
    assert {m["role"] for m in found["matches"]} == {"user", "assistant"}  # the echo answer says it too

    accented = d.call("session/search", {"query": "Café"})["matches"]
    assert [m["sessionId"] for m in accented if m["role"] == "user"] == [second]
    assert d.call("session/search", {"query": "parser", "limit": 1}) == {
        "matches": [found["matches"][0]], "truncated": True}


def test_tool_output_is_not_searched_and_bad_queries_are_refused(spawn, tmp_path):
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call("echo zebra-stripes")), "--model", "faux/s")
    d.call("prompt", {"text": "print something"})
    d.wait_event("agent_settled")
    assert d.call("session/search", {"query": "zebra-stripes"}) == {"matches": [], "truncated": False}
    for params in ({"query": ""}, {"query": "   "}, {"query": "x" * 201}, {"query": "x", "limit": 0}):
        error = d.request("session/search", params)["error"]
        assert error["code"] == -32602 and "params." in error["message"]
    assert d.call("session/search", {"query": "print"})["matches"][0]["snippet"] == "print something"
