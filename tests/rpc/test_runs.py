"""Runs through the daemon: events, settled once, queues, abort, continue."""

from client import text, write_script


def slow_script(tmp_path, replies, delay_ms=5):
    return str(write_script(tmp_path / "script.json", replies, modelId="slow", chunkSize=1, delayMs=delay_ms))


def test_a_run_streams_events_in_order_and_settles_once(spawn):
    d = spawn("--model", "faux/echo")
    assert d.call("prompt", {"text": "hello"}) == {"disposition": "started"}
    d.wait_event("agent_settled")
    types = d.event_types()
    assert types == ["agent_start", "turn_start", "message_start", "message_end", "message_start",
                     "message_end", "turn_end", "agent_end", "agent_settled"]
    seqs = [e["seq"] for e in d.events]
    assert seqs == list(range(1, len(seqs) + 1))
    updates = [e["event"] for e in d.events if e["event"]["type"] == "message_update"]
    assert all(set(u) <= {"type", "assistantMessageEvent", "usage"} for u in updates)  # deltas only
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["content"][-1]["text"] == d.texts()


def test_prompt_while_busy_is_refused_unless_queued(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("a" * 200), text("second"), text("third")]),
              "--model", "faux/slow")
    d.call("prompt", {"text": "first"})
    d.wait_event("message_update", 3)
    busy = d.request("prompt", {"text": "again"})["error"]
    assert busy["code"] == -32002 and "streamingBehavior" in busy["message"]
    queued = d.call("prompt", {"text": "then this", "streamingBehavior": "followUp"})
    assert queued["disposition"] == "queued" and queued["queueId"].startswith("q_")
    steer = d.call("steer", {"text": "actually"})
    assert steer["disposition"] == "queued"
    d.wait_event("agent_settled")
    users = [m["content"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
    assert users == ["first", "actually", "then this"]
    assert d.event_types().count("agent_settled") == 1
    queue_updates = [e["event"] for e in d.events if e["event"]["type"] == "queue_update"]
    assert {"type": "queue_update", "steering": ["actually"], "followUp": ["then this"]} in queue_updates
    assert queue_updates[-1] == {"type": "queue_update", "steering": [], "followUp": []}


def test_abort_answers_after_the_run_stopped(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("b" * 500), text("resumed")]), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 5)
    d.call("followUp", {"text": "keep me"})
    assert d.call("abort") == {"aborted": True}
    # By the time abort answered, the run had settled.
    assert d.event_types()[-1] in ("agent_settled", "queue_update")
    settled = d.wait_event("agent_settled")["event"]
    assert settled == {"type": "agent_settled", "aborted": True}
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "aborted" and 0 < len(final["content"][0]["text"]) < 500
    state = d.call("getState")
    assert state["isStreaming"] is False and state["queue"]["followUp"] == ["keep me"]
    assert d.call("abort") == {"aborted": False}
    # Nothing started by itself; continue delivers the queued follow-up.
    assert d.call("continue") == {"disposition": "started"}
    d.wait_event("agent_settled", 2)
    messages = d.call("getMessages")["messages"]
    assert messages[-2]["content"] == "keep me" and messages[-1]["content"][0]["text"] == "resumed"


def test_clear_queue_returns_the_texts(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("c" * 300)]), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    d.call("steer", {"text": "s1"})
    d.call("followUp", {"text": "f1"})
    assert d.call("clearQueue") == {"steering": ["s1"], "followUp": ["f1"]}
    d.call("abort")
    assert d.call("getState")["pendingMessageCount"] == 0


def test_continue_errors_are_specific(spawn):
    d = spawn("--model", "faux/echo")
    error = d.request("continue")["error"]
    assert error["code"] == -32001 and "no current session" in error["message"]
    d.call("session/new")
    error = d.request("continue")["error"]
    assert error["code"] == -32003 and "empty" in error["message"]
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled")
    error = d.request("continue")["error"]
    assert error["code"] == -32003 and "nothing is queued" in error["message"]


def test_provider_error_reaches_the_client_as_a_message(spawn, tmp_path):
    script = slow_script(tmp_path, [{"content": [], "stopReason": "error", "errorMessage": "rate limited"}], 0)
    d = spawn("--faux-script", script, "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "error" and final["errorMessage"] == "rate limited"
    assert d.call("getState")["lastError"] == "rate limited"
    # The faux script is now exhausted, and says so.
    d.call("prompt", {"text": "again"})
    d.wait_event("agent_settled", 2)
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert "script exhausted" in final["errorMessage"]
