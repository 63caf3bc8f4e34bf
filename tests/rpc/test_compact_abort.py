"""Stop during a compaction the user asked for (``compact`` / ``/compact``, no run): it ends
aborted and the conversation is as it was."""

from client import text, write_script


def test_abort_stops_a_compaction_the_user_asked_for(spawn, tmp_path):
    summary = {"content": [{"type": "text", "text": "## Goal\n" + "a slow summary. " * 400}],
               "when": "Write the summary in exactly this structure"}
    script = write_script(tmp_path / "script.json", [text("first answer"), text("second answer"), summary],
                          modelId="script", chunkSize=2, delayMs=20)
    d = spawn("--faux-script", str(script), "--model", "faux/script", cwd=str(tmp_path))
    for n, words in enumerate(("one", "two"), start=1):
        d.call("prompt", {"text": f"question {words}"})
        d.wait_event("agent_settled", count=n, timeout=60)
    before = d.call("getMessages")["messages"]
    pending = d.request_async("compact", {})
    d.wait_event("compaction_start")
    assert d.call("abort")["aborted"] is True
    end = d.wait_event("compaction_end", timeout=30)["event"]
    assert end["aborted"] is True and "result" not in end
    reply = d.wait_response(pending, timeout=30)
    assert "error" in reply and "aborted" in reply["error"]["message"], reply
    assert d.call("getMessages")["messages"] == before
