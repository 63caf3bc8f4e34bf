"""The agent's live plan through the real daemon: ``update_plan`` calls of a scripted model,
``plan_updated`` as each takes effect, ``getState.plan``, and the plan following the session:
sent again on ``session/load`` before ``replay_end``, and as it stood after a rewind or a move in
the tree."""

from __future__ import annotations

from client import text, write_script

FIRST = [{"step": "read the parser", "status": "in_progress"}, {"step": "fix the bug", "status": "pending"},
         {"step": "run the tests", "status": "pending"}]
SECOND = [{"step": "read the parser", "status": "completed"}, {"step": "fix the bug", "status": "in_progress"},
          {"step": "run the tests", "status": "pending"}]
TWO_AT_ONCE = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]


def plan_call(call_id: str, plan: list[dict], **extra) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "update_plan",
                         "arguments": {"plan": plan, **extra}}], "stopReason": "toolUse"}


def replies() -> list[dict]:
    return [plan_call("p1", FIRST, explanation="start"), plan_call("bad", TWO_AT_ONCE), text("planned"),
            plan_call("p2", SECOND), text("working")]


def start(spawn, tmp_path, *extra: str):
    script = write_script(tmp_path / "script.json", replies(), modelId="script")
    d = spawn("--faux-script", str(script), "--model", "faux/script", *extra)
    d.call("initialize", {})
    return d


def plans(d, session_id=None) -> list[dict]:
    return [e["event"] for e in d.events if e["event"]["type"] == "plan_updated"
            and (session_id is None or e["sessionId"] == session_id)]


def ended(d, call_id: str) -> dict:
    return d.wait_for(lambda e: e["type"] == "tool_execution_end" and e["toolCallId"] == call_id, call_id)["event"]


def said(end: dict) -> str:
    return "".join(c.get("text", "") for c in end["result"]["content"])


def test_each_update_replaces_the_plan_and_a_bad_one_is_refused_saying_why(spawn, tmp_path):
    d = start(spawn, tmp_path)
    d.call("prompt", {"text": "fix the parser"})
    d.wait_event("agent_settled", timeout=30)
    assert said(ended(d, "p1")) == "Plan updated: 3 steps, 0 completed."
    bad = ended(d, "bad")
    assert bad["isError"] and "steps 1, 2 are all in_progress" in said(bad)
    assert plans(d) == [{"type": "plan_updated", "entries": FIRST, "explanation": "start"}]
    order = d.event_types()
    p1_result = next(i for i, e in enumerate(d.events) if e["event"]["type"] == "message_end"
                     and e["event"]["message"].get("toolCallId") == "p1")
    assert d.events[p1_result + 1]["event"]["type"] == "plan_updated"  # once the result is in the file
    assert order.count("plan_updated") == 1
    state = d.call("getState", {})
    assert state["plan"] == FIRST and state["planExplanation"] == "start"

    d.call("prompt", {"text": "go on"})
    d.wait_event("agent_settled", count=2, timeout=30)
    assert said(ended(d, "p2")) == "Plan updated: 3 steps, 1 completed."
    assert plans(d)[-1] == {"type": "plan_updated", "entries": SECOND}
    assert d.call("getState", {})["plan"] == SECOND and "planExplanation" not in d.call("getState", {})


def test_the_plan_comes_back_on_load_and_follows_rewind_and_navigate(spawn, tmp_path):
    d = start(spawn, tmp_path)
    session_id = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "fix the parser"})
    d.wait_event("agent_settled", timeout=30)
    d.call("prompt", {"text": "go on"})
    d.wait_event("agent_settled", count=2, timeout=30)
    entries = d.call("session/entries", {})["entries"]
    leaf = entries[-1]["id"]
    second_prompt = next(e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"
                         and e["message"]["content"] == "go on")
    d.kill()

    again = spawn("--model", "faux/echo")
    again.call("initialize", {})
    again.call("session/load", {"sessionId": session_id, "replay": True})
    again.wait_event("replay_end", timeout=30)
    replayed = [e for e in again.events if e["sessionId"] == session_id]
    kinds = [e["event"]["type"] for e in replayed]
    assert kinds[-2:] == ["plan_updated", "replay_end"] and kinds.count("plan_updated") == 1
    assert replayed[-2]["event"]["entries"] == SECOND and replayed[-2]["replay"] is True
    assert again.call("getState", {})["plan"] == SECOND

    again.call("session/rewind", {"entryId": second_prompt["parentId"], "files": "keep"})
    assert again.wait_event("plan_updated", count=2)["event"] == {"type": "plan_updated", "entries": FIRST,
                                                                   "explanation": "start"}
    assert again.call("getState", {})["plan"] == FIRST
    again.call("session/navigate", {"entryId": leaf})
    assert again.wait_event("plan_updated", count=3)["event"]["entries"] == SECOND
    again.call("session/rewind", {"entryId": None, "files": "keep"})
    assert again.wait_event("plan_updated", count=4)["event"] == {"type": "plan_updated", "entries": []}
    assert again.call("getState", {})["plan"] == []


def test_update_plan_runs_in_plan_mode_and_changes_no_file(spawn, tmp_path):
    d = start(spawn, tmp_path)
    d.call("setMode", {"mode": "plan"})
    d.call("prompt", {"text": "plan it"})
    d.wait_event("agent_settled", timeout=30)
    assert not ended(d, "p1")["isError"]
    assert plans(d)[0]["entries"] == FIRST
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".pi") == ["script.json"]
