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
    assert busy["code"] == -32001 and "streamingBehavior" in busy["message"]
    queued = d.call("prompt", {"text": "then this", "streamingBehavior": "followUp"})
    assert queued["disposition"] == "queued" and queued["queueId"].startswith("q_")
    steer = d.call("steer", {"text": "actually"})
    assert steer["disposition"] == "queued"
    d.wait_event("agent_settled")
    users = [m["content"] for m in d.call("getMessages")["messages"] if m["role"] == "user"]
    assert users == ["first", "actually", "then this"]
    assert d.event_types().count("agent_settled") == 1
    queue_updates = [e["event"] for e in d.events if e["event"]["type"] == "queue_update"]
    assert {"type": "queue_update", "steering": ["actually"], "followUp": ["then this"],
            "items": [{"queueId": steer["queueId"], "kind": "steer", "text": "actually"},
                      {"queueId": queued["queueId"], "kind": "followUp", "text": "then this"}]} in queue_updates
    assert queue_updates[-1] == {"type": "queue_update", "steering": [], "followUp": [], "items": []}


def test_abort_answers_after_the_run_stopped_and_gives_back_what_was_queued(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("b" * 500), text("resumed"), text("and then")]),
              "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 5)
    d.call("followUp", {"text": "keep me"})
    d.call("steer", {"text": "steer me"})
    d.call("followUp", {"text": "and me"})
    assert d.call("abort") == {"aborted": True, "steering": ["steer me"], "followUp": ["keep me", "and me"]}
    # By the time abort answered, the run had settled and the queues were empty.
    assert d.event_types()[-1] in ("agent_settled", "queue_update")
    settled = d.wait_event("agent_settled")["event"]
    assert settled == {"type": "agent_settled", "aborted": True}
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "aborted" and 0 < len(final["content"][0]["text"]) < 500
    updates = [e["event"] for e in d.events if e["event"]["type"] == "queue_update"]
    assert updates[-1] == {"type": "queue_update", "steering": [], "followUp": [], "items": []}
    state = d.call("getState")
    assert state["isStreaming"] is False and state["pendingMessageCount"] == 0
    assert d.call("abort") == {"aborted": False, "steering": [], "followUp": []}
    # Nothing started by itself, and nothing queued fires with the next run.
    assert d.call("continue") == {"disposition": "started"}
    d.wait_event("agent_settled", 2)
    messages = d.call("getMessages")["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "assistant"]
    assert messages[2]["content"][0]["text"] == "resumed"


def test_abort_while_idle_gives_back_a_queue_left_by_a_loaded_session(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("d" * 400)]), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 3)
    d.call("followUp", {"text": "left over"})
    d.kill()  # the queued message stays in the session file
    again = spawn("--faux-script", slow_script(tmp_path, [text("d" * 400)]), "--model", "faux/slow")
    listed = again.call("session/list")["sessions"]
    again.call("session/load", {"sessionId": listed[0]["sessionId"]})
    assert again.call("getState")["queue"]["followUp"] == ["left over"]
    assert again.call("abort") == {"aborted": False, "steering": [], "followUp": ["left over"]}
    assert again.call("getState")["pendingMessageCount"] == 0


def test_clear_queue_returns_the_texts(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("c" * 300)]), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    d.call("steer", {"text": "s1"})
    d.call("followUp", {"text": "f1"})
    extra = d.call("followUp", {"text": "drop me"})["queueId"]
    assert d.call("removeQueued", {"queueId": extra}) == {"removed": True}
    assert d.call("removeQueued", {"queueId": extra}) == {"removed": False}
    assert d.call("clearQueue") == {"steering": ["s1"], "followUp": ["f1"]}
    d.call("abort")
    assert d.call("getState")["pendingMessageCount"] == 0


def test_continue_errors_are_specific(spawn):
    d = spawn("--model", "faux/echo")
    error = d.request("continue")["error"]
    assert error["code"] == -32002 and "no current session" in error["message"]
    d.call("session/new")
    error = d.request("continue")["error"]
    assert error["code"] == -32003 and "empty" in error["message"]
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled")
    error = d.request("continue")["error"]
    assert error["code"] == -32003 and "nothing is queued" in error["message"]


def test_provider_error_reaches_the_client_as_a_message(spawn, tmp_path):
    script = slow_script(tmp_path, [{"content": [], "stopReason": "error", "errorMessage": "400 bad request"}], 0)
    d = spawn("--faux-script", script, "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert final["stopReason"] == "error" and final["errorMessage"] == "400 bad request"
    assert "auto_retry_start" not in d.event_types()  # a 400 is not worth retrying
    assert d.call("getState")["lastError"] == "400 bad request"
    # The faux script is now exhausted, and says so.
    d.call("prompt", {"text": "again"})
    d.wait_event("agent_settled", 2)
    final = [e["event"] for e in d.events if e["event"]["type"] == "message_end"][-1]["message"]
    assert "script exhausted" in final["errorMessage"]


def test_retryable_failure_is_retried_and_settles_once(spawn, tmp_path):
    failure = {"content": [{"type": "text", "text": "par"}], "stopReason": "error", "errorMessage": "529 overloaded"}
    d = spawn("--faux-script", slow_script(tmp_path, [failure, failure, text("finally")], 0), "--model", "faux/slow")
    assert d.call("setAutoRetry", {"baseDelayMs": 20}) == {"enabled": True, "maxAttempts": 3, "baseDelayMs": 20}
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled")
    retries = [e["event"] for e in d.events if e["event"]["type"].startswith("auto_retry")]
    assert retries == [
        {"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 20, "errorMessage": "529 overloaded"},
        {"type": "auto_retry_start", "attempt": 2, "maxAttempts": 3, "delayMs": 40, "errorMessage": "529 overloaded"},
        {"type": "auto_retry_end", "success": True, "attempt": 2},
    ]
    ends = [e["event"]["willRetry"] for e in d.events if e["event"]["type"] == "agent_end"]
    assert ends == [True, True, False]
    assert d.event_types().count("agent_settled") == 1
    assert d.call("getMessages")["messages"][-1]["content"][0]["text"] == "finally"


def test_retry_can_be_switched_off_and_gives_up_after_max_attempts(spawn, tmp_path):
    failure = {"content": [], "stopReason": "error", "errorMessage": "503 unavailable"}
    d = spawn("--faux-script", slow_script(tmp_path, [failure] * 4, 0), "--model", "faux/slow")
    d.call("setAutoRetry", {"enabled": False})
    d.call("prompt", {"text": "one"})
    d.wait_event("agent_settled")
    assert "auto_retry_start" not in d.event_types()
    d.call("setAutoRetry", {"enabled": True, "maxAttempts": 2, "baseDelayMs": 1})
    d.call("prompt", {"text": "two"})
    d.wait_event("agent_settled", 2)
    end = [e["event"] for e in d.events if e["event"]["type"] == "auto_retry_end"][-1]
    assert end == {"type": "auto_retry_end", "success": False, "attempt": 2, "finalError": "503 unavailable"}
    bad = d.request("setAutoRetry", {"maxAttempts": -1})["error"]
    assert bad["code"] == -32602 and "maxAttempts" in bad["message"]


def test_abort_during_a_retry_wait(spawn, tmp_path):
    failure = {"content": [], "stopReason": "error", "errorMessage": "429 slow down"}
    d = spawn("--faux-script", slow_script(tmp_path, [failure, text("never")], 0), "--model", "faux/slow")
    d.call("setAutoRetry", {"baseDelayMs": 5000})
    d.call("prompt", {"text": "go"})
    d.wait_event("auto_retry_start")
    assert d.call("abort") == {"aborted": True, "steering": [], "followUp": []}
    assert d.events[-1]["event"] == {"type": "agent_settled", "aborted": True}
    assert [e["event"] for e in d.events if e["event"]["type"] == "auto_retry_end"] == [
        {"type": "auto_retry_end", "success": False, "attempt": 1, "finalError": "aborted"}]


def test_thousands_of_steers_are_bounded_and_refused_past_the_queues_limit(spawn, tmp_path):
    """Each queue_update carries the whole queue, so an unbounded queue made the output grow with
    the square of the steers (5,000 of them: 3.6 GB). Past 100 messages a steer is refused."""
    import json

    from test_malformed import rss_mib

    d = spawn("--faux-script", slow_script(tmp_path, [text("x" * 2000)], delay_ms=20), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    frames = [json.dumps({"jsonrpc": "2.0", "id": 1000 + n, "method": "steer",
                          "params": {"text": f"steer number {n} " + "s" * 60}}).encode() + b"\n" for n in range(2000)]
    d.send_raw(b"".join(frames))
    d._wait(lambda: all(1000 + n in d.responses for n in range(2000)) or None, 60, "2000 answers")
    answers = [d.responses[1000 + n] for n in range(2000)]
    assert sum("result" in a for a in answers) == 100
    refused = [a["error"] for a in answers if "error" in a]
    assert len(refused) == 1900 and all(e["code"] == -32003 and "100 messages" in e["message"] for e in refused)
    assert len(d.raw_stdout) < 10 << 20  # was ~300 MB for 2,000
    assert rss_mib(d.proc.pid) < 300
    assert d.call("clearQueue")["steering"][:1] == ["steer number 0 " + "s" * 60]
    d.call("abort")


def test_the_queue_holds_at_most_a_mebibyte(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("x" * 2000)], delay_ms=20), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    assert d.call("followUp", {"text": "a" * 600_000})["disposition"] == "queued"
    error = d.request("steer", {"text": "b" * 600_000})["error"]
    assert error["code"] == -32003 and "1024 KiB" in error["message"]
    assert d.call("getState")["pendingMessageCount"] == 1
    d.call("abort")


def test_queued_images_count_toward_the_queues_mebibyte(spawn, tmp_path):
    d = spawn("--faux-script", slow_script(tmp_path, [text("x" * 2000)], delay_ms=20), "--model", "faux/slow")
    d.call("prompt", {"text": "go"})
    d.wait_event("message_update", 2)
    image = {"data": "A" * 600_000, "mimeType": "image/png"}
    assert d.call("steer", {"text": "one", "images": [image]})["disposition"] == "queued"
    error = d.request("steer", {"text": "two", "images": [image]})["error"]
    assert error["code"] == -32003 and "1024 KiB" in error["message"]
    d.call("abort")
