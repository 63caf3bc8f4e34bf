"""Steering, follow-up, prompt-while-busy, queue modes, clearing and continue."""


import pytest

from helpers import Recorder, sleeper, wait_for
from pi_daemon.agent import Agent, AgentBusy, AgentError
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.messages import user_text



async def test_steering_during_slow_tool_is_delivered_after_the_whole_batch():
    faux = FauxProvider([
        tool_reply(("sleep", {"n": 1, "delay": 0.1}, "a"), ("sleep", {"n": 2, "delay": 0.2}, "b")),
        text_reply("changed course"),
    ])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    run = agent.prompt("start")
    await wait_for(rec, "tool_execution_start", 2)
    queued = await agent.steer("actually, stop")
    assert queued.kind == "steer" and queued.id.startswith("q_")
    assert rec.of("queue_update")[-1].steering == ["actually, stop"]
    await run
    types = rec.types()
    steer_at = next(i for i, e in enumerate(rec.events) if e.type == "message_end" and user_text(e.message) == "actually, stop")
    ends = [i for i, e in enumerate(rec.events) if e.type == "tool_execution_end"]
    assert all(i < steer_at for i in ends)  # after both tools, not between them
    second_request = faux.requests[1]
    assert [m.role for m in second_request.messages] == ["user", "assistant", "toolResult", "toolResult", "user"]
    assert user_text(second_request.messages[-1]) == "actually, stop"
    assert types.count("agent_end") == 1
    assert rec.of("queue_update")[-1].steering == []  # taken from the queue


async def test_follow_up_is_delivered_only_when_the_agent_would_stop():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.05})), text_reply("first done"), text_reply("second done")])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    run = agent.prompt("one")
    await wait_for(rec, "tool_execution_start")
    await agent.follow_up("two")
    await run
    users = [i for i, e in enumerate(rec.events) if e.type == "message_end" and e.message.role == "user"]
    first_done = next(i for i, e in enumerate(rec.events) if e.type == "message_end" and getattr(e.message, "text", lambda: "")() == "first done")
    assert users[1] > first_done  # only after the agent had finished the first task
    assert [m.role for m in faux.requests[2].messages][-2:] == ["assistant", "user"]
    assert agent.state.messages[-1].text() == "second done"
    assert rec.types().count("agent_end") == 1


async def test_prompt_while_busy_is_refused_clearly():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.1})), text_reply("ok")])
    agent = Agent(faux.model(), tools=[sleeper()])
    run = agent.prompt("one")
    with pytest.raises(AgentBusy, match="already running.*steer or followUp"):
        agent.prompt("two")
    await run
    assert [user_text(m) for m in agent.state.messages if m.role == "user"] == ["one"]


async def test_queue_modes_one_at_a_time_and_all():
    for mode, expected_requests in (("one-at-a-time", 3), ("all", 2)):
        faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.05})), text_reply("a"), text_reply("b"), text_reply("c")])
        agent = Agent(faux.model(), tools=[sleeper()], steering_mode=mode)
        rec = Recorder(agent)
        run = agent.prompt("go")
        await wait_for(rec, "tool_execution_start")
        await agent.steer("s1")
        await agent.steer("s2")
        await run
        assert len(faux.requests) == expected_requests, mode
        steer_texts = [user_text(m) for m in agent.state.messages if m.role == "user"][1:]
        assert steer_texts == ["s1", "s2"]


async def test_clear_queues_returns_removed_messages():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.1})), text_reply("ok")])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    run = agent.prompt("go")
    await wait_for(rec, "tool_execution_start")
    await agent.steer("s")
    await agent.follow_up("f")
    steering, follow = await agent.clear_queues()
    assert [q.text for q in steering] == ["s"] and [q.text for q in follow] == ["f"]
    assert rec.of("queue_update")[-1].steering == [] and rec.of("queue_update")[-1].follow_up == []
    await run
    assert len(faux.requests) == 2


async def test_continue_resumes_from_user_message_or_tool_result():
    faux = FauxProvider([text_reply("answer")])
    from pi_daemon.messages import UserMessage
    agent = Agent(faux.model(), messages=[UserMessage(content="left unanswered")])
    rec = Recorder(agent)
    await agent.continue_()
    assert agent.state.messages[-1].text() == "answer"
    assert [m.role for m in faux.requests[0].messages] == ["user"]
    assert rec.of("agent_end")[0].messages[0].role == "assistant"  # no prompt message re-delivered
    with pytest.raises(AgentError, match="nothing is queued"):
        agent.continue_()


async def test_continue_from_assistant_delivers_queued_follow_up():
    faux = FauxProvider([text_reply("first"), text_reply("second")])
    agent = Agent(faux.model())
    await agent.prompt("one")
    await agent.follow_up("later")
    await agent.continue_()
    assert [user_text(m) for m in agent.state.messages if m.role == "user"] == ["one", "later"]
    assert agent.state.messages[-1].text() == "second"


async def test_wait_for_idle():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.05})), text_reply("ok")])
    agent = Agent(faux.model(), tools=[sleeper()])
    agent.prompt("go")
    assert agent.is_running
    await agent.wait_for_idle()
    assert not agent.is_running and agent.state.messages[-1].text() == "ok"
