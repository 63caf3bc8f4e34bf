"""Abort: during streaming, during a tool (with a child process), and queued input kept."""

import asyncio
import os
import time

from helpers import Recorder, sleeper, wait_for
from pi_daemon.agent import Agent
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.messages import user_text
from pi_daemon.tools import FunctionTool



async def test_abort_during_streaming_keeps_partial_and_settles_fast():
    faux = FauxProvider([text_reply("x" * 400)], chunk_size=1, delay=0.005)
    agent = Agent(faux.model())
    rec = Recorder(agent)
    run = agent.prompt("talk")
    await wait_for(rec, "message_update", 10)
    started = time.monotonic()
    assert await agent.abort() is True
    settled = time.monotonic() - started
    await run
    assert settled < 1.5  # not the ~2 s the rest of the stream takes (a loaded host is slow, not that slow)
    final = rec.of("message_end")[-1].message
    assert final.stop_reason == "aborted" and 0 < len(final.text()) < 400
    assert agent.state.messages[-1] is final  # kept in history
    assert rec.types()[-2:] == ["turn_end", "agent_end"]
    assert agent.last_run_aborted


async def test_abort_cuts_off_a_provider_that_ignores_cancellation():
    async def stubborn(model, context, options, cancel):
        from pi_daemon.llm.stream import StreamBuilder
        b = StreamBuilder(model)
        yield b.start()
        start = b.text_start()
        yield start
        yield b.text_delta(start.content_index, "partial")
        await asyncio.sleep(30)  # never looks at ``cancel``

    faux = FauxProvider()
    agent = Agent(faux.model(), stream_fn=stubborn)
    rec = Recorder(agent)
    run = agent.prompt("go")
    await wait_for(rec, "message_update", 2)
    started = time.monotonic()
    await agent.abort()
    assert time.monotonic() - started < 5  # not the 30 s the provider would hold it
    await run
    final = agent.state.messages[-1]
    assert final.stop_reason == "aborted" and final.text() == "partial"


async def test_abort_during_tool_kills_its_child_process():
    pids = []

    async def spawn(args, *, cancel, **kw):
        proc = await asyncio.create_subprocess_exec("sleep", "30", stdin=asyncio.subprocess.DEVNULL)
        pids.append(proc.pid)
        try:
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return "finished"

    faux = FauxProvider([tool_reply(("spawn", {})), text_reply("never")])
    agent = Agent(faux.model(), tools=[FunctionTool("spawn", "s", {"type": "object"}, spawn)])
    rec = Recorder(agent)
    run = agent.prompt("go")
    await wait_for(rec, "tool_execution_start")
    while not pids:
        await asyncio.sleep(0.005)
    started = time.monotonic()
    await agent.abort()
    assert time.monotonic() - started < 5  # not the 30 s the child would run
    await run
    end = rec.of("tool_execution_end")[0]
    assert end.is_error and "aborted" in end.result.content[0].text
    assert rec.types()[-2:] == ["turn_end", "agent_end"]
    assert len(faux.requests) == 1  # no model call after the abort
    try:
        os.kill(pids[0], 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive


async def test_drained_but_undelivered_steering_comes_back_after_abort():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.05})), text_reply("never")])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)

    async def abort_on_second_turn(event):
        if event.type == "turn_start" and len(rec.of("turn_start")) == 2:
            # The steering message has been taken from the queue but not delivered yet.
            assert len(agent.steering) == 0
            agent._cancel.cancel()

    agent.subscribe(abort_on_second_turn)
    run = agent.prompt("go")
    await wait_for(rec, "tool_execution_start")
    await agent.steer("keep me")
    await run
    assert agent.steering.texts() == ["keep me"]
    assert rec.of("queue_update")[-1].steering == ["keep me"]
    assert "keep me" not in [user_text(m) for m in agent.state.messages if m.role == "user"]
    assert len(faux.requests) == 1


async def test_after_abort_nothing_starts_by_itself():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1, "delay": 0.2})), text_reply("resumed"), text_reply("then")])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    run = agent.prompt("go")
    await wait_for(rec, "tool_execution_start")
    await agent.follow_up("later")
    await agent.steer("sooner")
    await agent.abort()
    await run
    assert not agent.is_running and len(faux.requests) == 1
    assert agent.steering.texts() == ["sooner"] and agent.follow_ups.texts() == ["later"]
    # The next run delivers the queued steering first, the follow-up when it would stop.
    await agent.continue_()
    users = [user_text(m) for m in agent.state.messages if m.role == "user"]
    assert users == ["go", "sooner", "later"]
    assert agent.state.messages[-1].text() == "then"


async def test_abort_when_idle_is_a_no_op():
    agent = Agent(FauxProvider().model())
    assert await agent.abort() is False
