"""Subagents through the daemon: the task tool runs child sessions with their own files, events and costs."""

import json

from client import text, write_script


def call(*calls):
    """A scripted reply calling tools: each call ``(id, name, args)``."""
    return {"content": [{"type": "toolCall", "id": cid, "name": name, "arguments": args} for cid, name, args in calls],
            "stopReason": "toolUse"}


def task(cid, prompt, **more):
    return (cid, "task", {"prompt": prompt, **more})


def when(marker, reply):
    return {**reply, "when": marker}


def start(spawn, tmp_path, replies, *args):
    script = write_script(tmp_path / "script.json", replies, modelId="sub", cost={"input": 3, "output": 15})
    return spawn("--faux-script", str(script), "--model", "faux/sub", *args)


def ends(d, session_id):
    return {e["event"]["toolCallId"]: e["event"] for e in d.events
            if e["sessionId"] == session_id and e["event"]["type"] == "tool_execution_end"}


def subagent_events(d, kind):
    return {e["event"]["toolCallId"]: e["event"] for e in d.events if e["event"]["type"] == kind}


def header(path):
    with open(path) as f:
        return json.loads(f.readline())


def test_three_concurrent_tasks_are_child_sessions_with_their_own_events_and_usage(spawn, tmp_path):
    d = start(spawn, tmp_path, [
        call(task("t1", "alpha job", description="first"), task("t2", "beta job"), task("t3", "gamma job")),
        when("alpha", text("alpha answer")), when("beta", text("beta answer")), when("gamma", text("gamma answer")),
        text("all three done"),
    ])
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    settled = d.wait_event("agent_settled", session_id=parent, timeout=30)
    assert settled["event"]["aborted"] is False
    started, ended = subagent_events(d, "subagent_start"), subagent_events(d, "subagent_end")
    assert set(started) == set(ended) == {"t1", "t2", "t3"}
    assert started["t1"]["description"] == "first" and started["t2"]["description"] == "beta job"
    children = {cid: s["sessionId"] for cid, s in started.items()}
    assert len(set(children.values())) == 3 and parent not in children.values()
    results = ends(d, parent)
    for cid, word in (("t1", "alpha"), ("t2", "beta"), ("t3", "gamma")):
        child = children[cid]
        assert results[cid]["result"]["content"][0]["text"] == f"{word} answer" and not results[cid]["isError"]
        seqs = [e["seq"] for e in d.events if e["sessionId"] == child]
        assert seqs == list(range(1, len(seqs) + 1))
        types = d.event_types(child)
        assert types[0] == "agent_start" and types[-1] == "agent_settled"
        assert ended[cid]["status"] == "completed" and ended[cid]["sessionId"] == child
        assert ended[cid]["cost"] > 0 and ended[cid]["usage"]["output"] > 0
    listed = {s["sessionId"]: s for s in d.call("session/list", {})["sessions"]}
    for cid, child in children.items():
        assert listed[child]["parentSessionId"] == parent and listed[child]["parentToolCallId"] == cid
        head = header(listed[child]["file"])
        assert head["parentSessionId"] == parent and head["parentToolCallId"] == cid
    assert "parentSessionId" not in listed[parent]
    assert d.texts().count("all three done") == 1
    stats = d.call("session/stats", {"sessionId": parent})
    child_cost = sum(e["cost"] for e in ended.values())
    assert stats["subagents"]["count"] == 3 and abs(stats["subagents"]["cost"] - child_cost) < 1e-12
    own = sum(e["event"]["message"]["usage"]["cost"]["total"] for e in d.events if e["sessionId"] == parent
              and e["event"]["type"] == "message_end" and e["event"]["message"]["role"] == "assistant")
    assert abs(stats["cost"] - (own + child_cost)) < 1e-12
    loaded = d.call("session/load", {"sessionId": children["t2"]})
    assert loaded["sessionId"] == children["t2"]
    messages = d.call("getMessages", {"sessionId": children["t2"]})["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] and "beta job" in json.dumps(messages[0]["content"])
