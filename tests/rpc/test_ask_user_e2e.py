"""Questions to the user through the real daemon: ``ask_user`` is offered only to a client that
declared ``askUser``; the client's ``user/ask`` answer (options and typed text) is what the model
reads next; an abort withdraws the question and ends the run aborted; an unanswered question
times out like a permission request; a dismissed one is said so."""

from __future__ import annotations

import json

import pytest

from client import text, write_script
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project

OPTIONS = [{"label": "Postgres"}, {"label": "SQLite", "description": "one file, no server"}]
QUESTION = {"question": "Which database?", "options": OPTIONS, "allowText": True}


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def ask_call(call_id: str = "q", **args) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "ask_user", "arguments": args or QUESTION}],
            "stopReason": "toolUse"}


def scripted(spawn, tmp_path, *extra: str, ask_user: bool = True):
    script = write_script(tmp_path / "script.json", [ask_call(), text("thanks")], modelId="script")
    d = spawn("--faux-script", str(script), "--model", "faux/script", *extra)
    init = d.call("initialize", {"capabilities": {"askUser": ask_user}})
    assert init["capabilities"]["askUser"] is ask_user
    return d


def result_of(d, call_id: str = "q") -> dict:
    return d.wait_for(lambda e: e["type"] == "tool_execution_end" and e["toolCallId"] == call_id, call_id,
                      timeout=30)["event"]


def said(end: dict) -> str:
    return "".join(c.get("text", "") for c in end["result"]["content"])


def cancels(d) -> list:
    return [m["params"]["id"] for m in d.other if m.get("method") == "$/cancelRequest"]


def test_the_answer_with_typed_text_reaches_the_model(spawn, tmp_path, server):
    server.script(calls(("q", "ask_user", QUESTION)), Reply(body=openai_text("SQLite it is")))
    d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
    d.on_request["user/ask"] = lambda p: {"outcome": "answered", "selected": ["SQLite", "MySQL"],
                                          "text": "with WAL mode"}
    d.call("initialize", {"capabilities": {"askUser": True}})
    session_id = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "set up storage"})
    d.wait_event("agent_settled", timeout=30)
    asked = d.wait_server_request("user/ask")["params"]
    assert asked == {"sessionId": session_id, "toolCallId": "q", "question": "Which database?",
                     "options": OPTIONS, "multiSelect": False, "allowText": True,
                     "timeoutSeconds": asked["timeoutSeconds"]}
    end = result_of(d)
    assert not end["isError"]
    assert said(end) == "The user answered: SQLite\nThe user wrote: with WAL mode"  # MySQL was not offered
    assert end["result"]["details"] == {"outcome": "answered", "selected": ["SQLite"], "text": "with WAL mode"}
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert "The user wrote: with WAL mode" in json.dumps(tool_messages)


def test_only_a_client_that_can_answer_gets_the_tool(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("one")), Reply(body=openai_text("two")))
    for can_answer in (False, True):
        d = spawn("--model", "local/coder", cwd=project(tmp_path, server))
        d.call("initialize", {"capabilities": {"askUser": can_answer}})
        d.call("prompt", {"text": "hello"})
        d.wait_event("agent_settled", timeout=30)
        d.kill()
    offered = [[t["function"]["name"] for t in r.body["tools"]] for r in server.requests]
    assert "ask_user" not in offered[0] and "ask_user" in offered[1]


def test_a_client_without_the_capability_is_never_asked(spawn, tmp_path):
    d = scripted(spawn, tmp_path, ask_user=False)
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    end = result_of(d)
    assert end["isError"] and "ask_user" in said(end)  # no such tool in this session
    assert not [r for r in d.server_requests if r["method"] == "user/ask"]


def test_abort_while_the_question_waits_withdraws_it_and_the_run_ends_aborted(spawn, tmp_path):
    d = scripted(spawn, tmp_path)
    d.on_request["user/ask"] = lambda p: None  # shown, not answered
    d.call("prompt", {"text": "go"})
    asked = d.wait_server_request("user/ask")
    d.call("abort", {})
    settled = d.wait_event("agent_settled", timeout=30)["event"]
    assert settled["aborted"] is True
    assert asked["id"] in cancels(d)
    d.respond(asked["id"], {"outcome": "answered", "text": "too late"})  # ignored
    assert "too late" not in json.dumps(d.call("getMessages", {}))


def test_an_unanswered_question_times_out_and_the_run_goes_on(spawn, tmp_path):
    d = scripted(spawn, tmp_path, "--permission-timeout", "1")
    d.on_request["user/ask"] = lambda p: None
    d.call("prompt", {"text": "go"})
    asked = d.wait_server_request("user/ask")
    assert asked["params"]["timeoutSeconds"] == 1
    timeout = d.wait_event("question_timeout", timeout=30)["event"]
    assert timeout == {"type": "question_timeout", "toolCallId": "q"}
    end = result_of(d)
    assert said(end) == "Nobody answered the question in time." and not end["isError"]
    assert asked["id"] in cancels(d)
    settled = d.wait_event("agent_settled", timeout=30)["event"]
    assert not settled.get("aborted") and "thanks" in d.texts()


def test_a_dismissed_question_is_said_so(spawn, tmp_path):
    d = scripted(spawn, tmp_path)
    d.on_request["user/ask"] = lambda p: {"outcome": "dismissed"}
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    end = result_of(d)
    assert said(end) == "The user dismissed the question without answering." and not end["isError"]


def test_an_answer_is_kept_to_what_was_offered(spawn, tmp_path):
    one = ask_call("one", question="Pick one", options=[{"label": "A"}, {"label": "B"}])
    free = ask_call("free", question="Say anything")  # no options: the user types
    script = write_script(tmp_path / "script.json", [one, free, text("thanks")], modelId="script")
    d = spawn("--faux-script", str(script), "--model", "faux/script")
    d.on_request["user/ask"] = lambda p: ({"outcome": "answered", "selected": ["B", "A", "not offered"],
                                           "text": "typed where no typing was offered"}
                                          if p["toolCallId"] == "one" else
                                          {"outcome": "answered", "selected": ["A"], "text": "x" * 30_000})
    d.call("initialize", {"capabilities": {"askUser": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    assert said(result_of(d, "one")) == "The user answered: B"
    assert d.wait_server_request("user/ask", count=2)["params"]["allowText"] is True
    free_text = said(result_of(d, "free"))
    assert free_text.startswith("The user wrote: xxx") and "cut at 20000 characters" in free_text
    assert len(free_text) < 20_100


def test_a_subagents_question_names_it_and_its_parent(spawn, tmp_path):
    task = {"content": [{"type": "toolCall", "id": "t", "name": "task",
                         "arguments": {"prompt": "ask the user which database", "description": "ask"}}],
            "stopReason": "toolUse"}
    script = write_script(tmp_path / "script.json", [task, ask_call("child-q"), text("SQLite"), text("done")],
                          modelId="script")
    d = spawn("--faux-script", str(script), "--model", "faux/script")
    d.on_request["user/ask"] = lambda p: {"outcome": "answered", "selected": ["SQLite"]}
    d.call("initialize", {"capabilities": {"askUser": True}})
    parent = d.call("session/new", {})["sessionId"]
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", session_id=parent, timeout=30)
    asked = d.wait_server_request("user/ask")["params"]
    child = d.wait_event("subagent_start")["event"]["sessionId"]
    assert asked["sessionId"] == child != parent and asked["parentSessionId"] == parent
    assert said(result_of(d, "child-q")) == "The user answered: SQLite"
