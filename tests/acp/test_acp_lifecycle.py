"""The stable ACP session lifecycle over the real ``pi-daemon --acp``, read line by line as the
ACP conformance kit reads it: resume, close, delete, additionalDirectories, usage_update,
``$/cancel_request``, boolean options and logout. Each answer is checked with the official
Python SDK's schema models, and each test names the kit's requirement it stands for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (CloseSessionResponse, InitializeResponse, LoadSessionResponse, NewSessionResponse,
                        ResumeSessionResponse, SetSessionConfigOptionResponse, UsageUpdate)

from client import clean_env, write_script
from lines import Lines

HISTORY = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"}
SLOW = {"content": [{"type": "text", "text": "word " * 400}]}


def text(t: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}]}


def tool(name: str, args: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"content": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}],
            "stopReason": "toolUse"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    (folder / ".pi").mkdir(parents=True)
    return folder


def start(ws: Path, replies: list[dict[str, Any]] | None = None, capabilities: dict[str, Any] | None = None,
          env: dict[str, str] | None = None, **options: Any) -> Lines:
    model = ["--model", "faux/echo"]
    if replies is not None:
        script = write_script(ws.parent / f"script-{len(list(ws.parent.glob('script-*')))}.json", replies,
                              modelId="life", **options)
        model = ["--faux-script", str(script), "--model", "faux/life"]
    daemon = Lines("--acp", *model, cwd=ws, env=env)
    answer = daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
    InitializeResponse.model_validate(answer["result"])
    daemon.initialized = answer["result"]  # type: ignore[attr-defined]
    return daemon


def stop(daemon: Lines) -> None:
    assert b"Traceback" not in daemon.close()


def new_session(daemon: Lines, ws: Path, **params: Any) -> str:
    answer = daemon.request("session/new", {"cwd": str(ws), "mcpServers": [], **params})
    assert "result" in answer, answer
    NewSessionResponse.model_validate(answer["result"])
    return str(answer["result"]["sessionId"])


def prompt(daemon: Lines, session_id: str, words: str) -> dict[str, Any]:
    return daemon.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": words}]})


def between(daemon: Lines, first: dict[str, Any], last: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages read after ``first`` and before ``last``."""
    log = daemon.log
    return log[next(i for i, m in enumerate(log) if m is first) + 1:next(i for i, m in enumerate(log) if m is last)]


def test_initialize_advertises_the_session_lifecycle_and_logout(ws):
    daemon = start(ws)
    capabilities = daemon.initialized["agentCapabilities"]  # type: ignore[attr-defined]
    assert capabilities["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}, "delete": {},
                                                   "additionalDirectories": {}}
    assert capabilities["auth"] == {"logout": {}}
    assert daemon.initialized["authMethods"]  # type: ignore[attr-defined]
    stop(daemon)


def test_resume_reattaches_without_replaying_and_the_conversation_goes_on(ws):
    """ACP-RESUME-001/002: resume (no mcpServers) answers without history before it."""
    first = start(ws)
    session_id = new_session(first, ws)
    assert prompt(first, session_id, "the first question")["result"]["stopReason"] == "end_turn"
    stop(first)

    second = start(ws)
    before = second.log[-1]
    answer = second.request("session/resume", {"sessionId": session_id, "cwd": str(ws)})
    ResumeSessionResponse.model_validate(answer["result"])
    assert answer["result"]["modes"]["currentModeId"] == "ask"
    sent = second.updates(session_id, between(second, before, answer))
    assert not [u for u in sent if u["sessionUpdate"] in HISTORY]
    assert [u["sessionUpdate"] for u in sent] == ["available_commands_update", "usage_update"]
    assert sent[1]["used"] > 0 and sent[1]["size"] == 128_000  # the resumed history is in context
    assert prompt(second, session_id, "the second question")["result"]["stopReason"] == "end_turn"
    stop(second)
    lines = [json.loads(line) for f in (ws / ".pi" / "sessions").glob("*.jsonl") for line in f.read_text().splitlines()]
    asked = [e["message"]["content"] for e in lines if e.get("type") == "message" and e["message"]["role"] == "user"]
    assert asked == ["the first question", "the second question"]


def test_load_sends_everything_before_its_answer_and_nothing_after(ws):
    """ACP-LOAD-001/002/003: the replay, the commands and the usage all precede the answer."""
    first = start(ws)
    session_id = new_session(first, ws)
    prompt(first, session_id, "hello")
    stop(first)

    second = start(ws)
    answer = second.request("session/load", {"sessionId": session_id, "cwd": str(ws), "mcpServers": []})
    assert isinstance(answer["result"], dict)
    LoadSessionResponse.model_validate(answer["result"])
    later = second.request("session/list", {})  # anything sent after the load's answer precedes this one
    assert second.updates(session_id, between(second, answer, later)) == []
    kinds = [u["sessionUpdate"] for u in second.updates(session_id)]
    assert kinds[0] == "user_message_chunk" and kinds[-2:] == ["available_commands_update", "usage_update"]
    stop(second)


def test_close_cancels_the_running_prompt_and_keeps_the_file(ws):
    """ACP-CLOSE-001/002."""
    daemon = start(ws, [SLOW], chunkSize=3, delayMs=5)
    session_id = new_session(daemon, ws)
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]})
    daemon.wait(lambda m: m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    closed = daemon.request("session/close", {"sessionId": session_id})
    CloseSessionResponse.model_validate(closed["result"])
    assert daemon.answer(running)["result"] == {"stopReason": "cancelled"}
    gone = prompt(daemon, session_id, "still there?")
    assert gone["error"]["code"] == -32002 and "session/load" in gone["error"]["message"]
    listed = daemon.request("session/list", {})["result"]["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id]  # closed, not deleted
    reopened = daemon.request("session/resume", {"sessionId": session_id, "cwd": str(ws)})
    assert "result" in reopened
    stop(daemon)


def test_delete_removes_the_session_and_an_unknown_id_is_already_gone(ws):
    """ACP-DELETE-001/002 (and LIST-001/002 around them)."""
    daemon = start(ws)
    kept, dropped = new_session(daemon, ws), new_session(daemon, ws)
    prompt(daemon, kept, "stays")
    prompt(daemon, dropped, "soon gone")
    assert daemon.request("session/delete", {"sessionId": dropped})["result"] == {}
    assert [s["sessionId"] for s in daemon.request("session/list", {})["result"]["sessions"]] == [kept]
    (ws / "elsewhere").mkdir()  # ACP-LIST-002: a cwd no session has lists none
    assert daemon.request("session/list", {"cwd": str(ws / "elsewhere")})["result"]["sessions"] == []
    assert not [f for f in (ws / ".pi" / "sessions").glob("*.jsonl") if dropped in f.name]
    assert prompt(daemon, dropped, "hello?")["error"]["code"] == -32002
    assert daemon.request("session/delete", {"sessionId": "never-was"})["result"] == {}
    stop(daemon)
    fresh = start(ws)  # nothing opened yet on this connection: the folder it started in is asked
    assert fresh.request("session/delete", {"sessionId": "never-was"})["result"] == {}
    assert fresh.request("session/delete", {"sessionId": kept})["result"] == {}
    assert not list((ws / ".pi" / "sessions").glob("*.jsonl"))
    stop(fresh)


def test_additional_directories_widen_one_session_for_tools_and_the_sandbox(ws, tmp_path):
    """ACP-ADDDIRS-001, and what it means: the session's tools reach the folder, bash may write
    there, another session may not; resume replaces the list."""
    extra = tmp_path / "notes"
    extra.mkdir()
    (extra / "todo.txt").write_text("buy milk\n")
    replies = [tool("read", {"path": str(extra / "todo.txt")}, "r1"),
               tool("bash", {"command": f"echo done > {extra / 'out.txt'}"}, "b1"), text("ok"),
               tool("read", {"path": str(extra / "todo.txt")}, "r2"),
               tool("bash", {"command": f"echo no > {extra / 'other.txt'}"}, "b2"), text("ok"),
               tool("read", {"path": str(extra / "todo.txt")}, "r3"), text("ok")]
    daemon = start(ws, replies)
    widened = new_session(daemon, ws, additionalDirectories=[str(extra)])
    plain = new_session(daemon, ws)

    def results(session_id: str) -> dict[str, str]:
        done = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "tool_call_update"
                and u.get("status") in ("completed", "failed")]
        return {u["toolCallId"]: f"{u['status']}: {json.dumps(u.get('content'))}" for u in done}

    def allow(request: dict[str, Any]) -> None:
        daemon.send_raw(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {
            "outcome": {"outcome": "selected", "optionId": "allow_once"}}}).encode() + b"\n")

    for session_id in (widened, plain):
        asked = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
        allow(daemon.wait(lambda m: m.get("method") == "session/request_permission"))
        assert daemon.answer(asked)["result"]["stopReason"] == "end_turn"
    assert results(widened)["r1"].startswith("completed") and "buy milk" in results(widened)["r1"]
    assert results(widened)["b1"].startswith("completed")
    assert (extra / "out.txt").read_text() == "done\n"
    assert results(plain)["r2"].startswith("failed") and "outside the workspace" in results(plain)["r2"]
    assert results(plain)["b2"].startswith("failed") and not (extra / "other.txt").exists()  # read-only in the sandbox

    answer = daemon.request("session/resume", {"sessionId": plain, "cwd": str(ws), "additionalDirectories": [str(extra)]})
    assert "result" in answer
    assert prompt(daemon, plain, "again")["result"]["stopReason"] == "end_turn"
    assert results(plain)["r3"].startswith("completed")
    bad = daemon.request("session/new", {"cwd": str(ws), "mcpServers": [], "additionalDirectories": ["relative/dir"]})
    assert bad["error"]["code"] == -32602 and "absolute" in bad["error"]["message"]
    stop(daemon)


def test_usage_update_after_each_turn_counts_context_and_cost(ws):
    daemon = start(ws, [text("first answer"), text("second answer")], cost={"input": 3, "output": 15},
                   contextWindow=32_000)
    session_id = new_session(daemon, ws)
    prompt(daemon, session_id, "one")
    prompt(daemon, session_id, "two")
    usage = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "usage_update"]
    assert len(usage) == 2
    for u in usage:
        UsageUpdate.model_validate(u)
    assert usage[0]["size"] == 32_000 and 0 < usage[0]["used"] < usage[1]["used"]
    assert 0 < usage[0]["cost"]["amount"] < usage[1]["cost"]["amount"] and usage[1]["cost"]["currency"] == "USD"
    stop(daemon)


def test_a_compaction_updates_usage_and_its_own_call_is_counted(ws):
    daemon = start(ws, [text("first answer"), text("second answer"), text("THE SUMMARY")],
                   cost={"input": 3, "output": 15})
    session_id = new_session(daemon, ws)
    prompt(daemon, session_id, "one")
    prompt(daemon, session_id, "two")
    before = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "usage_update"][-1]
    assert prompt(daemon, session_id, "/compact")["result"]["stopReason"] == "end_turn"
    after = [u for u in daemon.updates(session_id) if u["sessionUpdate"] == "usage_update"][-1]
    assert after is not before and after["cost"]["amount"] > before["cost"]["amount"]
    stop(daemon)
    again = start(ws)  # reopened, the cost read from the file is the same
    resumed = again.request("session/resume", {"sessionId": session_id, "cwd": str(ws)})
    assert "result" in resumed
    assert again.updates(session_id)[-1]["cost"] == after["cost"]
    stop(again)


def test_cancel_request_of_a_prompt_stops_the_run(ws):
    """``$/cancel_request``: the prompt is answered -32800 and the session is free again."""
    daemon = start(ws, [SLOW, text("after")], chunkSize=3, delayMs=5)
    session_id = new_session(daemon, ws)
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "talk"}]})
    daemon.wait(lambda m: m.get("method") == "session/update"
                and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    daemon.notify("$/cancel_request", {"requestId": running})
    assert daemon.answer(running)["error"]["code"] == -32800
    assert prompt(daemon, session_id, "next")["result"]["stopReason"] == "end_turn"
    stop(daemon)


def test_a_permission_request_given_up_is_withdrawn_with_cancel_request(ws):
    daemon = start(ws, [tool("bash", {"command": "echo hi"}, "b1"), text("never")])
    session_id = new_session(daemon, ws)
    running = daemon.send("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]})
    asked = daemon.wait(lambda m: m.get("method") == "session/request_permission")
    daemon.notify("session/cancel", {"sessionId": session_id})
    withdrawn = daemon.wait(lambda m: m.get("method") == "$/cancel_request")
    assert withdrawn["params"] == {"requestId": asked["id"]}
    assert daemon.answer(running)["result"]["stopReason"] == "cancelled"
    stop(daemon)


def test_boolean_options_only_for_a_client_that_takes_them(ws):
    """ACP-CONFIG-001/002/003: ``auto_compact`` is offered only to a client advertising
    boolean options; setting it returns the whole list and it is kept with the session."""
    plain = start(ws)
    session_id = new_session(plain, ws)
    options = plain.request("session/set_config_option", {"sessionId": session_id, "configId": "thought_level",
                                                           "value": "high"})["result"]["configOptions"]
    assert [o["type"] for o in options] == ["select", "select", "select"]
    refused = plain.request("session/set_config_option", {"sessionId": session_id, "configId": "auto_compact",
                                                          "type": "boolean", "value": False})
    assert refused["error"]["code"] == -32602
    stop(plain)

    takes = start(ws, capabilities={"session": {"configOptions": {"boolean": {}}}})
    session_id = new_session(takes, ws)
    answer = takes.request("session/set_config_option", {"sessionId": session_id, "configId": "auto_compact",
                                                         "type": "boolean", "value": False})
    SetSessionConfigOptionResponse.model_validate(answer["result"])
    by_id = {o["id"]: o for o in answer["result"]["configOptions"]}
    assert set(by_id) == {"mode", "model", "thought_level", "auto_compact"} and by_id["auto_compact"]["currentValue"] is False
    wrong = takes.request("session/set_config_option", {"sessionId": session_id, "configId": "auto_compact",
                                                        "value": "off"})
    assert wrong["error"]["code"] == -32602 and "boolean" in wrong["error"]["message"]
    stop(takes)

    again = start(ws, capabilities={"session": {"configOptions": {"boolean": {}}}})
    loaded = again.request("session/resume", {"sessionId": session_id, "cwd": str(ws)})["result"]
    assert {o["id"]: o["currentValue"] for o in loaded["configOptions"]}["auto_compact"] is False
    stop(again)


def test_logout_forgets_the_keys_until_restart(ws):
    """ACP-AUTH-004, and what it means: the key the daemon read is no longer used."""
    daemon = start(ws, env=clean_env(OPENAI_API_KEY="sk-test-key"))
    assert daemon.request("authenticate", {"methodId": "openai"})["result"] == {}
    assert daemon.request("logout", {})["result"] == {}
    after = daemon.request("authenticate", {"methodId": "openai"})
    assert after["error"]["code"] == -32000 and "OPENAI_API_KEY is not set" in after["error"]["message"]
    stop(daemon)


def test_the_model_chosen_through_the_option_is_remembered_as_the_users_default(ws, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    daemon = start(ws, [text("scripted")], env=clean_env(str(home)))
    session_id = new_session(daemon, ws)
    answer = daemon.request("session/set_config_option", {"sessionId": session_id, "configId": "model",
                                                          "value": "faux/echo"})
    assert {o["id"]: o["currentValue"] for o in answer["result"]["configOptions"]}["model"] == "faux/echo"
    settings = json.loads((home / "settings.json").read_text())
    assert (settings["defaultProvider"], settings["defaultModel"]) == ("faux", "echo")
    fresh = daemon.request("session/new", {"cwd": str(ws), "mcpServers": []})["result"]
    assert {o["id"]: o["currentValue"] for o in fresh["configOptions"]}["model"] == "faux/echo"
    stop(daemon)
