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


def sleeper(marker):
    return when(marker, call((f"sleep-{marker}", "bash", {"command": "sleep 30"})))


def wait_children(d, count):
    d._wait(lambda: len(subagent_events(d, "subagent_start")) >= count, 10, f"{count} subagents")
    return {cid: s["sessionId"] for cid, s in subagent_events(d, "subagent_start").items()}


def test_aborting_one_child_leaves_its_siblings_and_the_parent_running(spawn, tmp_path):
    d = start(spawn, tmp_path, [
        call(task("t1", "alpha job"), task("t2", "beta job"), task("t3", "gamma job")),
        when("alpha", text("alpha answer")), sleeper("beta"), when("gamma", text("gamma answer")),
        text("two of three"),
    ], "--yes")
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    children = wait_children(d, 3)
    d.wait_event("tool_execution_start", session_id=children["t2"])
    assert d.call("abort", {"sessionId": children["t2"]}) == {"aborted": True, "steering": [], "followUp": []}
    assert d.wait_event("agent_settled", session_id=parent, timeout=30)["event"]["aborted"] is False
    results = ends(d, parent)
    assert results["t1"]["result"]["content"][0]["text"] == "alpha answer" and not results["t1"]["isError"]
    assert results["t3"]["result"]["content"][0]["text"] == "gamma answer" and not results["t3"]["isError"]
    assert results["t2"]["isError"] and "the subagent was aborted" in results["t2"]["result"]["content"][0]["text"]
    statuses = {cid: e["status"] for cid, e in subagent_events(d, "subagent_end").items()}
    assert statuses == {"t1": "completed", "t2": "aborted", "t3": "completed"}
    assert d.wait_event("agent_settled", session_id=children["t2"])["event"]["aborted"] is True
    assert "two of three" in d.texts()


def test_aborting_the_parent_stops_all_its_children(spawn, tmp_path):
    d = start(spawn, tmp_path, [
        call(task("t1", "alpha job"), task("t2", "beta job"), task("t3", "gamma job")),
        sleeper("alpha"), sleeper("beta"), sleeper("gamma"), text("never"),
    ], "--yes")
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    children = wait_children(d, 3)
    for child in children.values():
        d.wait_event("tool_execution_start", session_id=child)
    assert d.call("abort", {"sessionId": parent}) == {"aborted": True, "steering": [], "followUp": []}
    assert d.wait_event("agent_settled", session_id=parent)["event"]["aborted"] is True
    for child in children.values():  # settled before the parent's abort answered
        assert [e for e in d.events if e["sessionId"] == child and e["event"]["type"] == "agent_settled"
                ][0]["event"]["aborted"] is True
    assert {e["status"] for e in subagent_events(d, "subagent_end").values()} == {"aborted"}
    assert "never" not in d.texts()
    listed = {s["sessionId"] for s in d.call("session/list", {})["sessions"]}
    assert set(children.values()) <= listed
    assert d.request("abort", {"sessionId": children["t1"]})["error"]["code"] == -32002  # closed once it ended


def test_a_childs_write_needs_permission_as_the_parents_would_and_names_both(spawn, tmp_path):
    def write(cid, path):
        return (cid, "write", {"path": path, "content": cid})

    d = start(spawn, tmp_path, [
        call(write("w1", "a.txt")), call(task("t1", "child job")),
        when("child", call(write("cw1", "a.txt"), write("cw2", "b.txt"))), when("child", text("child done")),
        call(write("w2", "b.txt")), text("done"),
    ])
    answers = {"w1": "allow_session", "cw2": "allow_session", "w2": "reject_once"}
    d.on_request["permission/request"] = lambda params: {"outcome": answers[params["toolCallId"]]}
    d.call("initialize", {"capabilities": {"permissions": True}})
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", session_id=parent, timeout=30)
    child = subagent_events(d, "subagent_start")["t1"]["sessionId"]
    asked = [(r["params"]["toolCallId"], r["params"]["sessionId"], r["params"].get("parentSessionId"))
             for r in d.server_requests if r["method"] == "permission/request"]
    # the parent's "for this session" holds in its child (cw1 not asked); the child's does not hold in the parent
    assert asked == [("w1", parent, None), ("cw2", child, parent), ("w2", parent, None)]
    assert (tmp_path / "a.txt").read_text() == "cw1" and (tmp_path / "b.txt").read_text() == "cw2"
    assert ends(d, parent)["w2"]["isError"]


def test_tools_narrow_a_child_and_bad_names_or_models_are_clear_errors(spawn, tmp_path):
    d = start(spawn, tmp_path, [
        call(task("t1", "reader job", tools=["read"]), task("t2", "x", tools=["read", "nope"]),
             task("t3", "y", model="faux/missing"), task("t4", "z", tools=["task"]), task("t5", "nester job")),
        when("reader", call(("r1", "write", {"path": "x.txt", "content": "no"}))), when("reader", text("could not")),
        when("nester", call(("n1", "task", {"prompt": "deeper"}))), when("nester", text("no recursion")),
        text("done"),
    ], "--yes")
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", session_id=parent, timeout=30)
    results = ends(d, parent)
    said = {cid: r["result"]["content"][0]["text"] for cid, r in results.items()}
    assert not results["t1"]["isError"] and said["t1"] == "could not"
    assert results["t2"]["isError"] and "'nope'" in said["t2"] and "read" in said["t2"]
    assert results["t3"]["isError"] and "faux/missing" in said["t3"]
    assert results["t4"]["isError"] and "cannot start subagents" in said["t4"]
    assert not results["t5"]["isError"] and said["t5"] == "no recursion"
    children = {cid: s["sessionId"] for cid, s in subagent_events(d, "subagent_start").items()}
    assert set(children) == {"t1", "t5"}  # the refused calls started no child
    reader = ends(d, children["t1"])["r1"]
    assert reader["isError"] and "'write' does not exist" in reader["result"]["content"][0]["text"]
    assert "Available tools: read." in reader["result"]["content"][0]["text"]
    nested = ends(d, children["t5"])["n1"]
    assert nested["isError"] and "'task' does not exist" in nested["result"]["content"][0]["text"]
    assert not (tmp_path / "x.txt").exists()


def test_subagents_can_be_switched_off_in_settings(spawn, tmp_path):
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "settings.json").write_text(json.dumps({"subagents": {"enabled": False}}))
    d = start(spawn, tmp_path, [text("hi")])
    names = [t["name"] for t in d.call("listTools", {})["tools"]]
    assert "task" not in names and "read" in names


def test_a_child_follows_its_parents_plan_mode(spawn, tmp_path):
    d = start(spawn, tmp_path, [
        call(task("t1", "child job")),
        when("child job", call(("cw", "write", {"path": "child.txt", "content": "x"}), ("cr", "ls", {}))),
        when("child job", text("child could not write")),
        text("parent done"),
    ], "--yes")
    parent = d.call("session/new", {})["sessionId"]
    d.call("setMode", {"mode": "plan"})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", session_id=parent, timeout=30)
    child = subagent_events(d, "subagent_start")["t1"]["sessionId"]
    child_ends = ends(d, child)
    assert child_ends["cw"]["isError"] and "plan mode" in child_ends["cw"]["result"]["content"][0]["text"]
    assert not child_ends["cr"]["isError"] and not (tmp_path / "child.txt").exists()
