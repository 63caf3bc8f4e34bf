"""``session/search`` through the daemon: what was said in any of the workspace's sessions,
found by its text, newest session first, with where it is."""

import json

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


def memory_kb(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(key + ":"))


def test_one_enormous_line_is_passed_over_named_and_the_rest_still_searched(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    d.call("prompt", {"text": "where is the zeppelin parked?"})
    d.wait_event("agent_settled")
    other = d.call("getState")["sessionId"]
    # a session file shipped in the repository: a 40 MiB message line holding the text, then a short one
    shipped_id = "0123abcd-0000-4000-8000-000000000037"
    shipped = tmp_path / ".pi" / "sessions" / f"2026-01-01T00-00-00-000Z_{shipped_id}.jsonl"
    long_text = "zeppelin " + "z" * (40 << 20)
    lines = [{"type": "session", "version": 3, "id": shipped_id, "timestamp": "t", "cwd": str(tmp_path)},
             {"type": "message", "id": "a", "parentId": None, "timestamp": "t",
              "message": {"role": "user", "content": long_text, "timestamp": 1}},
             {"type": "message", "id": "b", "parentId": "a", "timestamp": "t",
              "message": {"role": "user", "content": "a zeppelin after it", "timestamp": 2}}]
    encoded = [json.dumps(line, separators=(",", ":")) for line in lines]
    shipped.write_text("\n".join(encoded) + "\n")
    del long_text

    pid = d.proc.pid
    with open(f"/proc/{pid}/clear_refs", "w") as refs:
        refs.write("5")  # the peak resident size starts again from now
    before = memory_kb(pid, "VmRSS")
    found = d.call("session/search", {"query": "zeppelin"})  # within the client's 10 s
    grown_mb = (memory_kb(pid, "VmHWM") - before) / 1024

    assert grown_mb < 64, f"the search took {grown_mb:.0f} MB more"
    said = {(m["sessionId"], m["snippet"]) for m in found["matches"] if m["role"] == "user"}
    assert said == {(other, "where is the zeppelin parked?"), (shipped_id, "a zeppelin after it")}
    assert found["skipped"] == [{
        "sessionId": shipped_id, "file": str(shipped), "line": 2, "bytes": len(encoded[1]),
        "reason": "a user message of 40 MiB, longer than the 16 MiB a search reads: not searched"}]
    listed = {s["sessionId"]: s for s in d.call("session/list")["sessions"]}
    assert listed[shipped_id]["messageCount"] == 2 and listed[other]["messageCount"] == 2
