"""The agent's plan over the real ``pi-daemon --acp``: ACP's ``plan`` update as each ``update_plan``
call takes effect, again before a load's or resume's answer, and after ``_pi/session/rewind``;
and no ``ask_user`` tool, since ACP v1's stable schema gives the agent no way to ask."""

from __future__ import annotations

from typing import Any

from acp.schema import AgentPlanUpdate

from test_acp_lifecycle import new_session, prompt, start, stop, text, ws  # noqa: F401 (ws: the fixture)

FIRST = [{"step": "read the parser", "status": "in_progress"}, {"step": "fix the bug", "status": "pending"}]
SECOND = [{"step": "read the parser", "status": "completed"}, {"step": "fix the bug", "status": "in_progress"}]


def plan_call(call_id: str, plan: list[dict[str, str]]) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "update_plan", "arguments": {"plan": plan}}],
            "stopReason": "toolUse"}


def acp_entries(plan: list[dict[str, str]]) -> list[dict[str, str]]:
    return [{"content": s["step"], "priority": "medium", "status": s["status"]} for s in plan]


def plan_updates(daemon: Any, session_id: str) -> list[dict[str, Any]]:
    found = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "plan"]
    for update in found:
        AgentPlanUpdate.model_validate(update)
    return found


ASK = {"content": [{"type": "toolCall", "id": "q", "name": "ask_user", "arguments": {"question": "Which?"}}],
       "stopReason": "toolUse"}


def test_plan_updates_live_on_reopening_and_after_a_rewind_and_no_question_is_asked(ws):
    daemon = start(ws, [plan_call("p1", FIRST), ASK, text("planned"), plan_call("p2", SECOND), text("working")],
                   capabilities={"elicitation": {"form": {}}})  # unstable in ACP v1: not used
    session_id = new_session(daemon, ws)
    prompt(daemon, session_id, "fix the parser")
    prompt(daemon, session_id, "go on")
    assert [u["entries"] for u in plan_updates(daemon, session_id)] == [acp_entries(FIRST), acp_entries(SECOND)]
    calls = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "tool_call"]
    assert [c["kind"] for c in calls] == ["think", "other", "think"]
    asked = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "tool_call_update"
             and u["toolCallId"] == "q" and u.get("status") in ("completed", "failed")]
    assert asked[-1]["status"] == "failed" and "ask_user" in asked[-1]["rawOutput"]["text"]  # no such tool here
    assert not [m for m in daemon.log if str(m.get("method", "")).startswith("elicitation/")]
    stop(daemon)

    for method in ("session/resume", "session/load"):  # the load rewinds, last
        again = start(ws)
        answer = again.request(method, {"sessionId": session_id, "cwd": str(ws), "mcpServers": []})
        assert "result" in answer, answer
        assert [u["entries"] for u in plan_updates(again, session_id)] == [acp_entries(SECOND)]
        kinds = [u["sessionUpdate"] for u in again.updates(session_id)]
        assert kinds[-3:] == ["plan", "available_commands_update", "usage_update"]
        if method == "session/load":
            tree = again.request("_pi/session/tree", {"sessionId": session_id})["result"]
            second = next(n for n in tree["nodes"] if n.get("role") == "user" and n.get("text") == "go on")
            assert "result" in again.request("_pi/session/rewind", {"sessionId": session_id,
                                                                     "entryId": second["parentId"], "files": "keep"})
            again.wait(lambda m: m.get("method") == "session/update"
                       and m["params"]["update"]["sessionUpdate"] == "plan"
                       and m["params"]["update"]["entries"] == acp_entries(FIRST))
        stop(again)
