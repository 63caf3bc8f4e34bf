"""Moving inside one session file through the daemon: navigate, branches, branch summaries, export."""

import json
import signal
import time
from pathlib import Path

import attrs
import jsonschema
import pytest

from client import text, write_script
from pi_daemon.session.entry_types import ENTRY_CLASSES, known_entry_types
from loopback import LoopbackServer, Reply, openai_text
from client import user_models


def entries_of(file):
    return [json.loads(line) for line in Path(file).read_bytes().splitlines()]


def echo_then_summary(tmp_path, answers: int) -> list[str]:
    """The echo model, but a short summary for the compaction that follows ``answers`` answers
    (the echo of a summary request is longer than the conversation: it would be refused)."""
    echo = {"echo": True}
    script = write_script(tmp_path / "echo.json", [echo] * answers + [text("## Goal\nthe questions so far")]
                          + [echo] * 4, modelId="echo-summary")
    return ["--faux-script", str(script), "--model", "faux/echo-summary"]


def ask(d, prompt, count):
    d.call("prompt", {"text": prompt})
    d.wait_event("agent_settled", count)
    ends = [e["event"] for e in d.events if e["event"]["type"] == "message_end" and not e.get("replay")]
    return ends[-2]["entryId"], ends[-1]["entryId"]  # the prompt's entry, the answer's entry


def contents(d, session_id=None):
    messages = d.call("getMessages", {"sessionId": session_id} if session_id else {})["messages"]
    return [m["content"] if m["role"] == "user" else m["content"][-1]["text"].split("\n")[0] for m in messages]


def test_navigate_continue_and_back_keep_both_branches_through_sigkill(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    u1, a1 = ask(d, "one", 1)
    u2, a2 = ask(d, "two", 2)
    moved = d.call("session/navigate", {"entryId": a1})
    assert moved["leafId"] == a1 and moved["state"]["messageCount"] == 2 and "summaryEntryId" not in moved
    assert contents(d) == ["one", "You said: one"]
    u3, a3 = ask(d, "three", 3)
    assert contents(d) == ["one", "You said: one", "three", "You said: three"]
    tree = d.call("session/tree")
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert tree["leafId"] == a3 and nodes[u3]["parentId"] == a1 and nodes[a1]["childCount"] == 2
    assert nodes[a2]["childCount"] == 0 and nodes[a2]["onPath"] is False and nodes[a3]["onPath"] is True
    branch = [e["id"] for e in d.call("session/entries")["entries"] if e["type"] == "message"]
    assert branch == [u1, a1, u3, a3]  # entries follow the current branch
    assert d.call("session/navigate", {"entryId": a2})["leafId"] == a2  # back to the first branch's leaf
    assert contents(d) == ["one", "You said: one", "two", "You said: two"]
    d.proc.send_signal(signal.SIGKILL)
    d.proc.wait(10)

    d2 = spawn()
    loaded = d2.call("session/load", {"sessionId": sid})
    assert loaded["state"]["messageCount"] == 4 and loaded["interrupted"] is False
    assert contents(d2) == ["one", "You said: one", "two", "You said: two"]
    tree = d2.call("session/tree")
    nodes = {n["id"]: n for n in tree["nodes"]}
    assert tree["leafId"] == a2 and {u2, a2, u3, a3} <= set(nodes) and nodes[a1]["childCount"] == 2
    u4, _ = ask(d2, "four", 1)
    assert nodes[a2]["id"] == entries_of(loaded["file"])[-2]["parentId"] == a2  # continued on the first branch
    assert d2.call("session/navigate", {"entryId": a3})["leafId"] == a3
    assert contents(d2) == ["one", "You said: one", "three", "You said: three"]
    assert any(e["type"] == "leaf" and e["targetId"] == a3 for e in entries_of(loaded["file"]))


def test_navigate_refuses_unknown_entries_and_active_runs(spawn, tmp_path):
    script = write_script(tmp_path / "slow.json", [text("a"), text("b" * 400)], modelId="slow", chunkSize=1,
                          delayMs=10)
    d = spawn("--faux-script", str(script), "--model", "faux/slow")
    d.call("session/new")
    _, a1 = ask(d, "first", 1)
    bad = d.request("session/navigate", {"entryId": "nope"})["error"]
    assert bad["code"] == -32602 and "params.entryId" in bad["message"] and "'nope'" in bad["message"]
    d.call("prompt", {"text": "second"})
    d.wait_event("message_update", 3)
    busy = d.request("session/navigate", {"entryId": a1})["error"]
    assert busy["code"] == -32001 and "run is active" in busy["message"]
    d.call("abort")
    assert d.call("session/navigate", {"entryId": a1})["leafId"] == a1


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def loopback_workspace(tmp_path, server):
    config = {"providers": {"local": {"baseUrl": server.url + "/v1", "api": "openai-completions",
                                      "models": [{"id": "coder", "contextWindow": 32000, "maxTokens": 512}]}}}
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, config)


def test_a_branch_summary_joins_the_context_where_the_branch_left(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("Use a hash map.")), Reply(body=openai_text("Tried the trie: too slow.")),
                  Reply(body=openai_text("## Goal\nfast lookup; the trie was too slow")),
                  Reply(body=openai_text("Going with the hash map.")))
    d = spawn("--model", "local/coder", cwd=loopback_workspace(tmp_path, server))
    d.call("session/new")
    _, a1 = ask(d, "how to look words up?", 1)
    _, a2 = ask(d, "try a trie", 2)
    moved = d.call("session/navigate", {"entryId": a1, "summarize": True})
    summary_request = server.requests[2].body["messages"]
    assert "try a trie" in json.dumps(summary_request) and "Tried the trie" in json.dumps(summary_request)
    summary = next(n for n in d.call("session/tree")["nodes"] if n["id"] == moved["summaryEntryId"])
    assert summary["type"] == "branch_summary" and summary["parentId"] == a1 and moved["leafId"] == summary["id"]
    stored = next(e for e in d.call("session/entries")["entries"] if e["id"] == summary["id"])
    assert stored["fromId"] == a2 and stored["summary"].startswith("## Goal")
    ask(d, "so which one?", 3)
    sent = json.dumps(server.requests[3].body["messages"])
    assert "the trie was too slow" in sent and "try a trie" not in sent  # the summary, not the branch itself
    assert server.requests[3].body["messages"][-1] == {"role": "user", "content": "so which one?"}


def test_abort_cancels_a_summarising_navigation_and_nothing_moves(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("A.")), Reply(body=openai_text("B.")),
                  Reply(body=openai_text("never finished " * 20), stall_after=40))
    d = spawn("--model", "local/coder", cwd=loopback_workspace(tmp_path, server))
    d.call("session/new")
    _, a1 = ask(d, "first", 1)
    _, a2 = ask(d, "second", 2)
    pending = d.request_async("session/navigate", {"entryId": a1, "summarize": True})
    deadline = time.monotonic() + 15
    while len(server.requests) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    busy = d.request("prompt", {"text": "meanwhile"})["error"]
    assert busy["code"] == -32001
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    error = d.wait_response(pending)["error"]
    assert error["code"] == -32003 and "did not move" in error["message"]
    assert d.call("session/tree")["leafId"] == a2 and d.call("getState")["messageCount"] == 4


def test_export_holds_the_history_after_compaction_and_the_whole_tree(spawn, tmp_path):
    d = spawn(*echo_then_summary(tmp_path, 3))
    d.call("session/new", {"name": "tree"})
    _, a1 = ask(d, "alpha question", 1)
    ask(d, "beta question", 2)
    ask(d, "gamma question", 3)
    d.call("setAutoCompaction", {"keepRecentTokens": 10})
    assert d.call("compact")["summary"]
    context = d.call("getMessages")["messages"]
    users = [m["content"] for m in context if m["role"] == "user"]
    assert context[0]["role"] == "compactionSummary" and "alpha question" not in users  # compacted away
    md = Path(d.call("session/export", {"format": "markdown"})["file"]).read_text()
    assert md.index("alpha question") < md.index("gamma question") < md.index("compaction: summary")
    d.call("session/navigate", {"entryId": a1})
    ask(d, "delta question", 4)
    branch = Path(d.call("session/export", {"format": "markdown", "path": "b.md"})["file"]).read_text()
    assert "delta question" in branch and "beta question" not in branch
    tree = Path(d.call("session/export", {"format": "html", "path": "t.html", "scope": "tree"})["file"]).read_text()
    assert "alpha question" in tree and "beta question" in tree and "delta question" in tree
    assert "Branch 1 of 2" in tree and "Branch 2 of 2" in tree and tree.index("(current)") > tree.index("Branch 2")


def test_every_entry_the_daemon_writes_has_its_declared_type(spawn, tmp_path):
    d = spawn(*echo_then_summary(tmp_path, 2))
    d.call("session/new", {"name": "typed"})
    _, a1 = ask(d, "alpha question", 1)
    ask(d, "beta question", 2)
    d.call("session/label", {"entryId": a1, "label": "start"})
    d.call("session/label", {"entryId": a1})  # the label removed: stored as null
    d.call("setThinkingLevel", {"level": "high"})
    d.call("setAutoCompaction", {"keepRecentTokens": 10})
    assert d.call("compact")["summary"]
    d.call("session/navigate", {"entryId": a1})
    entries = d.call("session/entries", {"scope": "file"})["entries"]
    written = {e["type"] for e in entries}
    assert {"message", "model_change", "thinking_level_change", "session_info", "label", "session_settings",
            "compaction", "leaf"} <= written
    assert written <= set(known_entry_types())  # none of them passes only as an unknown entry
    defs = json.loads((Path(__file__).resolve().parents[2] / "protocol.schema.json").read_text())["$defs"]
    for entry in entries:  # each against its own type's declaration, not just the union
        name = next(c.__name__ for c in ENTRY_CLASSES if attrs.fields_dict(c)["type"].default == entry["type"])
        jsonschema.validate(entry, {"$defs": defs, "$ref": f"#/$defs/{name}"})
