"""What a client needs to keep track of a session through the daemon: seq across reopen and
restart, replay markers, entry and queue ids, per-session settings, the session's folder,
mid-stream usage, and which sessions are listed."""

import json
import time
from pathlib import Path

import pytest

from client import text, write_script
from loopback import LoopbackServer, Reply, anthropic_message, openai_chunk, openai_error, openai_sse, openai_text
from client import user_models


def entries_of(file):
    return [json.loads(line) for line in Path(file).read_bytes().splitlines()]


def test_seq_goes_on_across_a_reopen_replays_are_marked_not_counted_and_a_restart_is_announced(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "one"})
    d.wait_event("agent_settled")
    last = d.events[-1]["seq"]
    d.call("session/close")
    loaded = d.call("session/load", {"sessionId": sid, "replay": True})
    assert loaded["nextSeq"] == last + 1
    end = d.wait_event("replay_end")
    replayed = [e for e in d.events if e.get("replay")]
    assert [e["seq"] for e in replayed] == [last] * 5  # two messages, then the end mark: the last live seq
    assert end["event"] == {"type": "replay_end", "messageCount": 2} and end["replay"] is True
    stored = [e["id"] for e in entries_of(loaded["file"]) if e["type"] == "message"]
    assert [e["event"]["entryId"] for e in replayed if e["event"]["type"] == "message_end"] == stored
    d.call("prompt", {"text": "two"})
    d.wait_event("agent_settled", 2)
    live = [e for e in d.events if not e.get("replay")]
    assert [e["seq"] for e in live] == list(range(1, len(live) + 1))  # no gap, no restart
    assert [n for n, e in enumerate(d.events) if e.get("replay")] == list(range(last, last + 5))
    assert d.close() == 0

    d2 = spawn()  # a new daemon process counts from 1, and says so
    assert d2.call("session/load", {"sessionId": sid})["nextSeq"] == 1
    d2.call("prompt", {"text": "three"})
    d2.wait_event("agent_settled")
    assert d2.events[0]["seq"] == 1


def test_from_seq_sends_exactly_the_missed_events_else_says_replay_and_replays(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "one"})
    d.wait_event("agent_settled")
    sent = list(d.events)
    last = sent[-1]["seq"]
    loaded = d.call("session/load", {"sessionId": sid, "fromSeq": 3})
    assert loaded["catchUp"] == "events" and loaded["nextSeq"] == last + 1
    d.wait_for(lambda e: len(d.events) == len(sent) + last - 2, "the events from seq 3 again")
    assert d.events[len(sent):] == sent[2:]  # as first sent: the same seq, no replay flag

    assert d.request("session/load", {"sessionId": sid, "fromSeq": 0})["error"]["code"] == -32602
    d.call("session/close")  # a closed session keeps no events: from the file
    again = d.call("session/load", {"sessionId": sid, "fromSeq": 3, "replay": False})
    assert again["catchUp"] == "replay" and again["nextSeq"] == last + 1
    end = d.wait_event("replay_end")
    assert end["replay"] is True and end["seq"] == last and end["event"]["messageCount"] == 2
    other = d.call("session/load", {"sessionId": sid, "fromSeq": last + 50})  # another process's seq
    assert other["catchUp"] == "replay"
    d.wait_event("replay_end", 2)
    d.call("prompt", {"text": "two"})
    d.wait_event("agent_settled", 2)
    live = [e["seq"] for e in d.events if not e.get("replay")]
    assert live[len(sent) + last - 2:] == list(range(last + 1, live[-1] + 1))  # counting went on, no gap


def test_message_end_names_its_entry_and_queues_have_ids(spawn, tmp_path):
    script = write_script(tmp_path / "slow.json", [text("x" * 300), text("done")], modelId="slow", chunkSize=1,
                          delayMs=5)
    d = spawn("--faux-script", str(script), "--model", "faux/slow")
    file = d.call("session/new")["file"]
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    first = d.call("followUp", {"text": "first"})["queueId"]
    second = d.call("steer", {"text": "second"})["queueId"]
    queue = d.call("getState")["queue"]
    assert queue["items"] == [{"queueId": second, "kind": "steer", "text": "second"},
                              {"queueId": first, "kind": "followUp", "text": "first"}]
    assert queue["steering"] == ["second"] and queue["followUp"] == ["first"]
    assert d.call("removeQueued", {"queueId": first}) == {"removed": True}
    d.wait_event("agent_settled")
    ends = [e["event"]["entryId"] for e in d.events if e["event"]["type"] == "message_end"]
    assert ends == [e["id"] for e in entries_of(file) if e["type"] == "message"] and len(ends) == 4


def test_queue_modes_retry_and_compaction_settings_survive_a_reload(spawn, tmp_path):
    d = spawn("--model", "faux/echo")
    sid = d.call("session/new")["sessionId"]
    d.call("setQueueModes", {"steering": "all"})
    d.call("setAutoRetry", {"maxAttempts": 7, "baseDelayMs": 500})
    d.call("setAutoCompaction", {"enabled": False, "keepRecentTokens": 1234})
    state = d.call("getState")
    assert state["isCompacting"] is False
    expected = {"autoRetry": {"enabled": True, "maxAttempts": 7, "baseDelayMs": 500},
                "autoCompaction": {"enabled": False, "reserveTokens": 16384, "keepRecentTokens": 1234}}
    assert state["settings"] == expected
    assert d.close() == 0
    d2 = spawn()
    state = d2.call("session/load", {"sessionId": sid})["state"]
    assert state["steeringMode"] == "all" and state["followUpMode"] == "one-at-a-time"
    assert state["settings"] == expected
    other = d2.call("session/new")["sessionId"]  # per session: a new one has the defaults
    assert d2.call("getState", {"sessionId": other})["settings"]["autoRetry"]["maxAttempts"] == 3


def test_get_state_says_while_compaction_runs(spawn, tmp_path):
    script = write_script(tmp_path / "slow.json", [text("a"), text("b"), text("s" * 400)], modelId="slow",
                          chunkSize=1, delayMs=5)
    d = spawn("--faux-script", str(script), "--model", "faux/slow")
    d.call("session/new")
    for n, prompt in enumerate(["first question " * 60, "second question " * 60], 1):  # longer than the summary
        d.call("prompt", {"text": prompt})
        d.wait_event("agent_settled", n, timeout=20)
    d.call("setAutoCompaction", {"keepRecentTokens": 10})
    pending = d.request_async("compact")
    d.wait_event("compaction_start")
    assert d.call("getState")["isCompacting"] is True
    assert "result" in d.wait_response(pending, timeout=30)
    assert d.call("getState")["isCompacting"] is False


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def workspace_for(tmp_path, server, api="openai-completions", base="/v1"):
    (tmp_path / ".pi").mkdir(exist_ok=True)
    return user_models(tmp_path, {"providers": {"local": {
        "baseUrl": server.url + base, "api": api, "apiKey": "test-key",
        "models": [{"id": "coder", "contextWindow": 32000, "maxTokens": 512}]}}})


def test_a_sessions_folder_is_its_tools_instructions_and_prompt(spawn, tmp_path, server):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "AGENTS.md").write_text("Indent with tabs in pkg.")
    write = openai_sse([openai_chunk({"tool_calls": [{"index": 0, "id": "w", "type": "function", "function": {
        "name": "write", "arguments": json.dumps({"path": "notes.txt", "content": "hi"})}}]}),
        openai_chunk({}, "tool_calls")])
    server.script(Reply(body=write), Reply(body=openai_text("Written.")))
    d = spawn("--model", "local/coder", "--yes", cwd=workspace_for(tmp_path, server))
    d.call("session/new", {"cwd": "pkg"})
    assert d.call("getState")["cwd"] == str(pkg)
    d.call("prompt", {"text": "write notes"})
    d.wait_event("agent_settled", timeout=20)
    system = server.requests[0].body["messages"][0]
    assert system["role"] == "system" and "Indent with tabs in pkg." in system["content"]
    assert f"Working folder: {pkg}" in system["content"]
    assert (pkg / "notes.txt").read_text() == "hi" and not (tmp_path / "notes.txt").exists()
    ran = d.call("bash", {"command": "pwd; seq 1 100000"})  # the user's commands run there too
    assert ran["output"].endswith("100000\n") and ran["fullOutputPath"].startswith(str(tmp_path / ".pi" / "tmp"))
    assert Path(ran["fullOutputPath"]).read_text().startswith(f"{pkg}\n")
    for outside in ("/", "..", "missing"):
        error = d.request("session/new", {"cwd": outside})["error"]
        assert error["code"] == -32602 and "params.cwd" in error["message"], outside


def test_message_update_carries_usage_the_provider_reported_mid_stream(spawn, tmp_path, server):
    blocks = [{"start": {"type": "text", "text": ""},
               "deltas": [{"type": "text_delta", "text": t} for t in ("Hel", "lo", "!")]}]
    server.script(Reply(body=anthropic_message(blocks, input_tokens=321, cache_read=40)))
    d = spawn("--model", "local/coder", cwd=workspace_for(tmp_path, server, api="anthropic-messages", base=""))
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled", timeout=20)
    updates = [e["event"] for e in d.events if e["event"]["type"] == "message_update"]
    with_usage = [u for u in updates if "usage" in u]
    assert len(with_usage) == 1 and with_usage[0] is updates[0]
    assert with_usage[0]["usage"]["input"] == 321 and with_usage[0]["usage"]["cacheRead"] == 40


def test_only_sessions_with_something_said_are_listed(spawn, tmp_path, server):
    server.script(openai_error(400, "bad request: this model is not served here"))
    ws = workspace_for(tmp_path, server)
    (tmp_path / ".pi" / "models.json").write_text(json.dumps({"providers": {"repo": {  # the workspace's own
        "baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"id": "m"}]}}}))
    d = spawn("--model", "repo/m", cwd=ws)  # not trusted: new sessions have no model
    refused = d.request("prompt", {"text": "never stored"})["error"]  # refused before storing
    assert refused["code"] == -32004 and refused["data"]["reason"] == "untrustedWorkspace"
    d.call("session/new")  # nothing said yet
    assert d.call("session/list")["sessions"] == []
    failed = d.call("session/new", {"model": "local/coder"})["sessionId"]
    d.call("prompt", {"text": "stored, then the request failed"})
    d.wait_event("agent_settled", timeout=20)
    time.sleep(0.01)
    named = d.call("session/new", {"name": "plans"})["sessionId"]
    listed = d.call("session/list")["sessions"]
    assert [s["sessionId"] for s in listed] == [named, failed]
    assert listed[1]["firstMessage"] == "stored, then the request failed" and listed[1]["messageCount"] == 2
