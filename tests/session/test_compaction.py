"""Compaction: the cut, the summary request, threshold between turns, overflow recovery."""

import asyncio

import pytest

from helpers import Recorder, await_until, sleeper
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.llm.registry import Entry, ModelRegistry
from pi_daemon.messages import AssistantMessage, TextContent, Usage
from pi_daemon.session import compaction as C
from pi_daemon.session.manager import SessionManager
from pi_daemon.session.rebuild import context_messages
from pi_daemon.session.store import SessionStore

SUMMARY = ("## Goal\nShip it\n## Constraints & Preferences\nnone\n## Progress\n### Done\nread a.py\n"
           "### In Progress\nnone\n### Blocked\nnone\n## Key Decisions\nnone\n## Next Steps\ntest\n"
           "## Critical Context\nnone\n## Files\n### Read\na.py\n### Modified\nnone")


def manager_with(tmp_path, faux, tools=()):
    registry = ModelRegistry([Entry(faux.model())])
    manager = SessionManager(registry, str(tmp_path), faux.model())
    import pi_daemon.session.manager as m
    m_tools = m.default_tools
    m.default_tools = lambda *a: list(tools)
    try:
        session = manager.create()
    finally:
        m.default_tools = m_tools
    return manager, session


def fill(store: SessionStore, turns: int, size: int = 400) -> None:
    for n in range(turns):
        store.append("message", message={"role": "user", "content": f"question {n} " + "q" * size, "timestamp": n})
        store.append("message", message={"role": "assistant", "content": [
            {"type": "toolCall", "id": f"c{n}", "name": "read", "arguments": {"path": f"f{n}.py"}}],
            "stopReason": "toolUse", "api": "faux", "provider": "faux", "model": "m",
            "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "timestamp": n})
        store.append("message", message={"role": "toolResult", "toolCallId": f"c{n}", "toolName": "read",
                                         "content": [{"type": "text", "text": "r" * size}], "isError": False,
                                         "timestamp": n})


def test_the_cut_keeps_recent_tokens_and_never_lands_on_a_tool_result(tmp_path):
    store = SessionStore.create(tmp_path / "s.jsonl", "s", "/w")
    fill(store, 10)
    for keep in (50, 150, 250, 333, 600):
        plan = C.plan(store, keep)
        kept = store.by_id[plan.first_kept_id]
        assert kept["message"]["role"] != "toolResult"
        summarized_calls = {b["id"] for e in plan.summarize for b in e["message"].get("content", [])
                            if isinstance(b, dict) and b.get("type") == "toolCall"}
        summarized_results = {e["message"]["toolCallId"] for e in plan.summarize if e["message"]["role"] == "toolResult"}
        assert summarized_calls == summarized_results  # no call separated from its result
    assert C.plan(store, 10_000_000) is None  # everything fits: nothing to compact
    store.close()


async def test_manual_compaction_writes_an_entry_and_rebuilds_the_context(tmp_path):
    faux = FauxProvider([text_reply(SUMMARY)], model_id="compact-manual")
    manager, session = manager_with(tmp_path, faux)
    fill(session.store, 6, size=4000)
    session.agent.state.messages = context_messages(session.store)
    rec = Recorder()
    session.subscribe(rec)
    result = await session.compact("focus on the files")
    assert result.summary == SUMMARY and [e.type for e in rec.events] == ["compaction_start", "compaction_end"]
    assert rec.events[1].result.first_kept_entry_id == result.first_kept_entry_id
    request = faux.requests[0]
    prompt = request.messages[0].content
    assert "## Goal" in prompt and "### Modified" in prompt and "focus on the files" in prompt
    assert "[Assistant called read]" in prompt and "Files read so far: f0.py" in prompt
    entry = session.store.entries[-1]
    assert entry["type"] == "compaction" and entry["details"]["readFiles"][0] == "f0.py"
    messages = session.agent.state.messages
    assert messages[0].role == "compactionSummary" and messages[0].summary == SUMMARY
    assert result.estimated_tokens_after < result.tokens_before
    await session.close()


async def test_repeated_compaction_builds_on_the_previous_summary(tmp_path):
    faux = FauxProvider([text_reply("first summary"), text_reply("second summary")], model_id="compact-twice")
    manager, session = manager_with(tmp_path, faux)
    fill(session.store, 8, size=4000)
    first = await session.compact()
    kept_by_first = first.first_kept_entry_id
    fill(session.store, 8, size=4000)
    await session.compact()
    second_prompt = faux.requests[1].messages[0].content
    assert "<previous-summary>\nfirst summary" in second_prompt
    kept_by_first_text = C.transcript([session.store.by_id[kept_by_first]])
    assert kept_by_first_text in second_prompt  # what the first compaction kept is summarised, not lost
    assert session.agent.state.messages[0].summary == "second summary"
    await session.close()


async def test_threshold_compaction_happens_between_turns_never_inside_a_tool_batch(tmp_path):
    big = "x" * 6000
    faux = FauxProvider([
        tool_reply(("sleep", {"n": 1}, "t1"), ("sleep", {"n": 2}, "t2"), text=big),
        text_reply(SUMMARY),
        text_reply("done after compaction"),
    ], model_id="compact-threshold", context_window=2000)
    manager, session = manager_with(tmp_path, faux, tools=[sleeper()])
    session.compaction.reserve_tokens = 500
    session.compaction.keep_recent_tokens = 100
    rec = Recorder()
    session.subscribe(rec)
    await session.prompt("please " + "p" * 1000)  # with the system prompt and the tool, under the threshold
    await session.wait_settled()
    types = rec.types()
    start = types.index("compaction_start")
    assert types.index("tool_execution_end") < start and types.count("tool_execution_end") == 2
    last_result = max(i for i, e in enumerate(rec.events) if e.type == "message_end" and e.message.role == "toolResult")
    assert last_result < rec.events.index(rec.of("compaction_start")[0])
    assert rec.of("compaction_start")[0].reason == "threshold"
    assert session.agent.state.messages[0].role == "compactionSummary"
    assert session.messages[-1].text() == "done after compaction"
    sent = faux.requests[2].messages
    assert sent[0].role == "user" and "summary" in sent[0].content[0].text  # the summary leads the context
    assert types.count("agent_settled") == 1
    await session.close()


async def test_overflow_compacts_and_retries_once(tmp_path):
    overflow = AssistantMessage(content=[], stop_reason="error",
                                error_message="400 prompt is too long: 250000 tokens > 200000 maximum")
    faux = FauxProvider([overflow, text_reply(SUMMARY), text_reply("fits now")], model_id="compact-overflow")
    manager, session = manager_with(tmp_path, faux)
    fill(session.store, 6, size=4000)
    session.agent.state.messages = context_messages(session.store)
    session.compaction.enabled = False  # only the overflow path
    rec = Recorder()
    session.subscribe(rec)
    await session.prompt("go on")
    await session.wait_settled()
    ends = rec.of("agent_end")
    assert [e.will_retry for e in ends] == [True, False]
    end = rec.of("compaction_end")[0]
    assert end.reason == "overflow" and end.will_retry is True
    assert session.messages[-1].text() == "fits now"
    assert len(rec.of("agent_settled")) == 1
    await session.close()


async def test_overflow_that_persists_is_not_retried_forever(tmp_path):
    overflow = AssistantMessage(content=[], stop_reason="error", error_message="prompt is too long")
    faux = FauxProvider([overflow, text_reply(SUMMARY), overflow], model_id="compact-overflow-twice")
    manager, session = manager_with(tmp_path, faux)
    fill(session.store, 6, size=4000)
    session.agent.state.messages = context_messages(session.store)
    await session.prompt("go on")
    await session.wait_settled()
    assert len(faux.requests) == 3 and session.messages[-1].stop_reason == "error"
    await session.close()


async def test_abort_during_compaction(tmp_path):
    faux = FauxProvider([text_reply("s" * 2000)], model_id="compact-abort", chunk_size=1, delay=0.01)
    manager, session = manager_with(tmp_path, faux)
    fill(session.store, 6, size=4000)
    rec = Recorder()
    session.subscribe(rec)
    task = asyncio.ensure_future(session.compact())
    await await_until(lambda: rec.of("compaction_start"), "the compaction to start")
    session._compaction_cancel.cancel()
    assert await task is None
    assert rec.of("compaction_end")[0].aborted is True
    assert not any(e.get("type") == "compaction" for e in session.store.entries)
    await session.close()


def test_context_tokens_uses_reported_usage_plus_estimate():
    # explicit times: made a millisecond apart on a loaded host, the question would be newer than its answer
    answered = AssistantMessage(content=[TextContent(text="ok")], usage=Usage(input=900, output=100, total_tokens=1000),
                                timestamp=2_000)
    from pi_daemon.messages import UserMessage
    assert C.context_tokens([UserMessage(content="a" * 4000, timestamp=1_000), answered]) == 1000
    assert C.context_tokens([answered, UserMessage(content="b" * 400, timestamp=3_000)]) == 1000 + 104


@pytest.mark.parametrize("window, used, expected", [
    (200_000, 10_000, False),
    (36_000, 20_000, True),    # 20,000 > 36,000 - 16,384
    (40_000, 20_000, False),
    (15_000, 10_000, True),    # a small window keeps half of itself in reserve: 10,000 > 7,500
    (20_000, 10_000, False),
])
def test_threshold(window, used, expected):
    from pi_daemon.llm.model import Model
    model = Model(id="m", provider="p", api="faux", context_window=window)
    messages = [AssistantMessage(content=[], usage=Usage(input=used, total_tokens=used))]
    assert (C.context_tokens(messages) > C.threshold(model, C.CompactionSettings())) is expected
