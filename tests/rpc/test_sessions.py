"""Sessions in the workspace, through the daemon: files, resume, fork, list, crash safety."""

import json
import signal
import sys
import time
from pathlib import Path

from client import Daemon, text, write_script


def script(tmp_path, replies, name="script", **options):
    return str(write_script(tmp_path / f"{name}.json", replies, modelId=name, **options))


def entries_of(file):
    return [json.loads(line) for line in Path(file).read_bytes().splitlines()]


def test_new_session_file_exists_at_once_and_records_the_conversation(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    created = d.call("session/new", {"name": "first"})
    file = Path(created["file"])
    assert file.parent == tmp_path / ".pi" / "sessions" and file.name.endswith(f"_{created['sessionId']}.jsonl")
    assert (file.parent / ".gitignore").read_text() == "*\n"
    header, *rest = entries_of(file)
    assert header["type"] == "session" and header["id"] == created["sessionId"] and header["cwd"] == str(tmp_path)
    assert [e["type"] for e in rest] == ["model_change", "thinking_level_change", "session_info"]
    d.call("prompt", {"text": "remember me"})
    d.wait_event("agent_settled")
    d.call("setThinkingLevel", {"level": "low"})
    kinds = [(e["type"], e.get("message", {}).get("role")) for e in entries_of(file)[4:]]
    assert kinds == [("message", "user"), ("message", "assistant"), ("thinking_level_change", None)]
    assert d.call("getState")["sessionFile"] == str(file)


def test_load_restores_messages_model_thinking_and_replays(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    d.call("setThinkingLevel", {"level": "high"})
    d.call("prompt", {"text": "one"})
    d.wait_event("agent_settled")
    assert d.close() == 0
    d2 = spawn()  # no --model: the session's own model comes back
    loaded = d2.call("session/load", {"sessionId": sid, "replay": True})
    assert loaded["sessionId"] == sid and loaded["interrupted"] is False
    state = loaded["state"]
    assert state["model"]["id"] == "echo" and state["thinkingLevel"] == "high" and state["messageCount"] == 2
    replayed = d2.wait_event("message_end", 2, session_id=sid)
    d2.wait_event("replay_end")
    assert [e["event"]["type"] for e in d2.events] == ["message_start", "message_end"] * 2 + ["replay_end"]
    assert replayed["event"]["message"]["role"] == "assistant"
    d2.call("prompt", {"text": "two"})
    d2.wait_event("agent_settled")
    messages = d2.call("getMessages")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert len([e for e in entries_of(loaded["file"]) if e["type"] == "message"]) == 4  # replay wrote nothing


def test_list_fork_clone_name_delete_close(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    a = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "first question"})
    d.wait_event("agent_settled")
    d.call("prompt", {"text": "second question"})
    d.wait_event("agent_settled", 2)
    time.sleep(0.02)
    b = d.call("session/new")["sessionId"]
    d.call("session/setName", {"name": "Named one"})
    assert d.wait_event("session_info_changed")["event"] == {"type": "session_info_changed", "name": "Named one"}
    listed = d.call("session/list")["sessions"]
    assert [s["sessionId"] for s in listed] == [b, a]  # newest first
    assert listed[0]["name"] == "Named one" and listed[1]["firstMessage"] == "first question"
    assert listed[1]["messageCount"] == 4 and listed[1]["createdAt"] and listed[1]["updatedAt"]

    entries = d.call("session/entries", {"sessionId": a})["entries"]
    second = next(e for e in entries if e.get("message", {}).get("content") == "second question")
    forked = d.call("session/fork", {"sessionId": a, "entryId": second["id"]})
    assert forked["text"] == "second question"
    fork_messages = d.call("getMessages", {"sessionId": forked["sessionId"]})["messages"]
    assert [m["content"] if m["role"] == "user" else "…" for m in fork_messages] == ["first question", "…"]
    assert entries_of(forked["file"])[0]["parentSession"].endswith(f"_{a}.jsonl")
    assistant = next(e for e in entries if e.get("message", {}).get("role") == "assistant")
    bad = d.request("session/fork", {"sessionId": a, "entryId": assistant["id"]})["error"]
    assert bad["code"] == -32602 and "fork needs a user message" in bad["message"]
    bad = d.request("session/fork", {"sessionId": a, "entryId": "nope"})["error"]
    assert bad["code"] == -32602 and "no entry with id 'nope'" in bad["message"]

    cloned = d.call("session/clone", {"sessionId": a})
    assert len(d.call("getMessages", {"sessionId": cloned["sessionId"]})["messages"]) == 4
    assert d.call("session/close", {"sessionId": b}) == {"closed": True}
    assert d.request("getState", {"sessionId": b})["error"]["code"] == -32002
    deleted = d.call("session/delete", {"sessionId": cloned["sessionId"]})
    assert not Path(deleted["file"]).exists()
    assert cloned["sessionId"] not in [s["sessionId"] for s in d.call("session/list")["sessions"]]


def test_entries_cursor_survives_restarts_and_tree_and_stats(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled")
    first = d.call("session/entries", {"limit": 2})
    assert first["header"]["id"] == sid and len(first["entries"]) == 2 and first["more"] is True
    cursor = first["cursor"]
    d.close()
    d2 = spawn()
    d2.call("session/load", {"sessionId": sid})
    d2.call("prompt", {"text": "again"})
    d2.wait_event("agent_settled")
    rest = d2.call("session/entries", {"since": cursor})
    assert [e["type"] for e in rest["entries"]][-4:] == ["message"] * 4 and rest["more"] is False
    assert rest["entries"][0]["id"] != cursor
    bad = d2.request("session/entries", {"since": "zzzz"})["error"]
    assert bad["code"] == -32602 and "params.since" in bad["message"]
    first_user = next(e for e in rest["entries"] if e.get("message", {}).get("role") == "user")
    assert d2.call("session/label", {"entryId": first_user["id"], "label": "checkpoint"}) == {
        "entryId": first_user["id"], "label": "checkpoint"}
    bad = d2.request("session/label", {"entryId": "nope", "label": "x"})["error"]
    assert bad["code"] == -32602 and "params.entryId" in bad["message"]
    tree = d2.call("session/tree")
    by_id = {n["id"]: n for n in tree["nodes"]}
    assert by_id[first_user["id"]]["label"] == "checkpoint"
    leaf = by_id[tree["leafId"]]
    assert leaf["role"] == "assistant" and by_id[leaf["parentId"]]["text"] == "again"
    stats = d2.call("session/stats")
    assert stats["userMessages"] == 2 and stats["assistantMessages"] == 2 and stats["toolCalls"] == 0
    assert stats["tokens"]["output"] > 0 and stats["contextWindow"] == 128000 and stats["contextTokens"] > 0


def test_export_html_and_markdown(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    d.call("session/new", {"name": "Export <me>"})
    d.call("prompt", {"text": "<script>alert(1)</script> please"})
    d.wait_event("agent_settled")
    page = Path(d.call("session/export", {"format": "html"})["file"])
    html = page.read_text()
    assert html.startswith("<!doctype html>") and "<style>" in html and "&lt;script&gt;" in html
    assert "<script>" not in html and "Export &lt;me&gt;" in html and "You said:" in html
    md = Path(d.call("session/export", {"format": "markdown", "path": "out/chat.md"})["file"])
    assert md == tmp_path / "out" / "chat.md" and md.read_text().startswith("# Export <me>")
    bad = d.request("session/export", {"format": "pdf"})["error"]
    assert bad["code"] == -32602 and "params.format" in bad["message"]


def test_bad_session_inputs_are_specific_errors(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    (tmp_path / "notes.jsonl").write_text('{"not": "a session"}\n')
    (tmp_path / ".pi" / "sessions").mkdir(parents=True)
    (tmp_path / ".pi" / "sessions" / "notes.jsonl").write_text('{"not": "a session"}\n')
    error = d.request("session/load", {"file": ".pi/sessions/notes.jsonl"})["error"]
    assert error["code"] == -32007 and "not a pi-daemon session file" in error["message"]
    error = d.request("session/load", {"file": ".pi/sessions/missing.jsonl"})["error"]
    assert error["code"] == -32007 and "no session file" in error["message"]
    error = d.request("session/load", {"sessionId": "0000"})["error"]
    assert error["code"] == -32002 and "no session with id '0000'" in error["message"]
    error = d.request("session/load", {})["error"]
    assert error["code"] == -32002 and "needs a sessionId or a file" in error["message"]
    error = d.request("session/delete", {"file": "notes.jsonl"})["error"]
    assert error["code"] == -32007 and (tmp_path / "notes.jsonl").exists()
    assert d.call("getState")["isStreaming"] is False


def kill_during(tmp_path, spawn_args, trigger, cmd=None):
    d = Daemon(*spawn_args, cwd=str(tmp_path), cmd=cmd)
    try:
        sid = d.call("session/new")["sessionId"]
        trigger(d)
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait(5)
    finally:
        d.kill()
    return sid


def test_sigkill_mid_stream_loses_only_the_partial_and_continue_resumes(spawn, tmp_path):
    args = ["--faux-script", script(tmp_path, [text("a" * 2000), text("resumed answer")], chunkSize=1, delayMs=2),
            "--model", "faux/script"]

    def trigger(d):
        d.call("prompt", {"text": "a long question"})
        d.wait_event("message_update", 20)
        d.call("steer", {"text": "queued before the crash"})

    sid = kill_during(tmp_path, args, trigger)
    d = spawn(*args)
    loaded = d.call("session/load", {"sessionId": sid})
    assert loaded["interrupted"] is True
    assert loaded["state"]["queue"]["steering"] == ["queued before the crash"]
    messages = d.call("getMessages")["messages"]
    assert [m["role"] for m in messages] == ["user"] and messages[0]["content"] == "a long question"
    d.call("continue")
    d.wait_event("agent_settled")
    roles = [(m["role"], m.get("content") if m["role"] == "user" else None) for m in d.call("getMessages")["messages"]]
    assert roles == [("user", "a long question"), ("user", "queued before the crash"), ("assistant", None)]
    assert d.call("getState")["queue"]["steering"] == []


SLOW_TOOL_DAEMON = """
import asyncio, sys
from pi_daemon.tools import FunctionTool
import pi_daemon.session.manager as manager

async def slow(args, **kw):
    await asyncio.sleep(args.get("seconds", 30))
    return "slept"

manager.default_tools = lambda *a: [FunctionTool("slow", "Sleeps", {"type": "object"}, slow)]
from pi_daemon.cli import main
main(sys.argv[1:])
"""


def test_sigkill_mid_tool_batch_then_reload_and_continue(spawn, tmp_path):
    call = {"content": [{"type": "toolCall", "id": "c1", "name": "slow", "arguments": {"seconds": 30}},
                        {"type": "toolCall", "id": "c2", "name": "slow", "arguments": {"seconds": 0}}],
            "stopReason": "toolUse"}
    args = ["--faux-script", script(tmp_path, [call, text("after the crash")]), "--model", "faux/script"]
    cmd = [sys.executable, "-c", SLOW_TOOL_DAEMON, *args]

    def trigger(d):
        d.call("prompt", {"text": "run the tools"})
        d.wait_event("tool_execution_end")  # c2 finished, c1 still sleeping

    sid = kill_during(tmp_path, args, trigger, cmd=cmd)
    d = spawn(*args)
    loaded = d.call("session/load", {"sessionId": sid})
    assert loaded["interrupted"] is True
    assert [m["role"] for m in d.call("getMessages")["messages"]] == ["user", "assistant"]
    d.call("continue")
    d.wait_event("agent_settled")
    assert d.call("getMessages")["messages"][-1]["content"][0]["text"] == "after the crash"


def test_two_daemons_on_one_file(spawn, tmp_path):
    first = spawn("--model", "faux/echo")
    sid = first.call("session/new")["sessionId"]
    second = spawn("--model", "faux/echo")
    error = second.request("session/load", {"sessionId": sid})["error"]
    assert error["code"] == -32006 and "open in another process" in error["message"]
    assert "close the session there or stop that agent, then open it again" in error["message"]  # what to do
    first.call("session/close", {"sessionId": sid})
    assert second.call("session/load", {"sessionId": sid})["sessionId"] == sid


def test_a_session_of_10000_entries(spawn, tmp_path):
    folder = tmp_path / ".pi" / "sessions"
    folder.mkdir(parents=True)
    sid = "big-session"
    lines = [json.dumps({"type": "session", "version": 3, "id": sid, "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": str(tmp_path)})]
    parent = None
    for n in range(10_000):
        role = "user" if n % 2 == 0 else "assistant"
        message = ({"role": "user", "content": f"question {n}", "timestamp": n} if role == "user" else
                   {"role": "assistant", "content": [{"type": "text", "text": "answer " * 200}], "api": "faux",
                    "provider": "faux", "model": "echo", "usage": {"input": 1, "output": 1, "cacheRead": 0,
                    "cacheWrite": 0, "totalTokens": 2, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                    "cacheWrite": 0, "total": 0}}, "stopReason": "stop", "timestamp": n})
        lines.append(json.dumps({"type": "message", "id": f"e{n}", "parentId": parent,
                                 "timestamp": "2026-01-01T00:00:00.000Z", "message": message}))
        parent = f"e{n}"
    (folder / f"2026-01-01T00-00-00-000000Z_{sid}.jsonl").write_text("\n".join(lines) + "\n")
    d = spawn("--model", "faux/echo")
    loaded = d.call("session/load", {"sessionId": sid})
    assert loaded["state"]["messageCount"] == 10_000
    assert d.call("session/list")["sessions"][0]["messageCount"] == 10_000
    d.call("setAutoCompaction", {"enabled": False})
    d.call("prompt", {"text": "one more"})
    d.wait_event("agent_settled")
    assert d.call("getState")["messageCount"] == 10_002


def test_compact_through_the_daemon(spawn, tmp_path):
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text('{"compaction": {"reserveTokens": 1000, "keepRecentTokens": 50}}')
    replies = [text("first answer " * 50), text("second answer " * 50), text("## Goal\nsummarised"),
               text("z" * 30000)]
    d = spawn("--faux-script", script(tmp_path, replies, chunkSize=50, delayMs=2), "--model", "faux/script")
    assert d.call("setAutoCompaction", {}) == {"enabled": True, "reserveTokens": 1000, "keepRecentTokens": 50}
    d.call("setAutoCompaction", {"enabled": False})
    for n, question in enumerate(("one " * 100, "two " * 100)):
        d.call("prompt", {"text": question})
        d.wait_event("agent_settled", n + 1)
    result = d.call("compact", {"customInstructions": "keep it short"})
    assert result["summary"] == "## Goal\nsummarised" and result["tokensBefore"] > result["estimatedTokensAfter"]
    assert [e["event"]["type"] for e in d.events if e["event"]["type"].startswith("compaction")] == [
        "compaction_start", "compaction_end"]
    messages = d.call("getMessages")["messages"]
    assert messages[0] == {"role": "compactionSummary", "summary": "## Goal\nsummarised",
                           "tokensBefore": result["tokensBefore"], "timestamp": messages[0]["timestamp"]}
    d.call("setAutoRetry", {"enabled": False})
    before = len([e for e in d.events if e["event"]["type"] == "message_update"])
    d.call("prompt", {"text": "three"})
    d.wait_event("message_update", before + 3)
    busy = d.request("compact")["error"]
    assert busy["code"] == -32001 and "run is active" in busy["message"]
    d.call("abort")
    file = d.call("getState")["sessionFile"]
    d.close()
    d2 = spawn("--faux-script", script(tmp_path, [], name="empty"), "--model", "faux/empty")
    reloaded = d2.call("session/load", {"file": file})
    assert d2.call("getMessages")["messages"][0]["role"] == "compactionSummary"
    assert reloaded["state"]["messageCount"] == len(d2.call("getMessages")["messages"])
    bad = d2.request("setAutoCompaction", {"reserveTokens": -5})["error"]
    assert bad["code"] == -32602 and "reserveTokens" in bad["message"]


def test_loading_an_open_session_reports_it_interrupted_too(spawn, tmp_path):
    call = {"content": [{"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "sleep 30"}}],
            "stopReason": "toolUse"}
    # nobody to ask: bash must be allowed up front, or the call is refused before it runs
    d = spawn("--faux-script", script(tmp_path, [call]), "--model", "faux/script", "--allow", "bash")
    sid = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "run it"})
    d.wait_event("tool_execution_start")
    d.call("abort")  # the tool result is there, the answer to it is not
    again = d.call("session/load", {"sessionId": sid})
    assert again["sessionId"] == sid and again["interrupted"] is True


def test_at_most_256_sessions_are_open_at_once(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    ids = [d.call("session/new", {})["sessionId"] for _ in range(256)]
    error = d.request("session/new", {})["error"]
    assert error["code"] == -32003 and "256 sessions are open" in error["message"]
    assert len(list((tmp_path / ".pi" / "sessions").glob("*.jsonl"))) == 256  # no file for the refused one
    d.call("session/close", {"sessionId": ids[0]})
    assert d.call("session/new", {})["sessionId"] not in ids
