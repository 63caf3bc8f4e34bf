"""The loop's event sequence, tool execution and hooks, driven by the faux provider."""

import asyncio

from helpers import Recorder, sleeper
from pi_daemon.agent import Agent
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.messages import AssistantMessage, TextContent, ToolCall, ToolResult
from pi_daemon.tools import FunctionTool


async def test_text_answer_exact_event_sequence():
    faux = FauxProvider([text_reply("Hello there", thinking="plan")], chunk_size=4)
    agent = Agent(faux.model())
    rec = Recorder(agent)
    await agent.prompt("hi")
    assert rec.types(skip_updates=False) == [
        "agent_start", "turn_start",
        "message_start", "message_end",  # the prompt
        "message_start",
        "message_update", "message_update", "message_update",  # thinking start, "plan", end
        "message_update", "message_update", "message_update", "message_update", "message_update",
        "message_end", "turn_end", "agent_end",
    ]
    updates = [e.assistant_message_event for e in rec.of("message_update")]
    assert [u.type for u in updates] == [
        "thinking_start", "thinking_delta", "thinking_end",
        "text_start", "text_delta", "text_delta", "text_delta", "text_end",
    ]
    assert "".join(u.delta for u in updates if u.type == "text_delta") == "Hello there"
    # On the wire an update is the delta alone, never the partial message again.
    wire_update = [w for w in rec.wire() if w["type"] == "message_update"][4]
    assert wire_update == {
        "type": "message_update",
        "assistantMessageEvent": {"type": "text_delta", "contentIndex": 1, "delta": "Hell"},
    }
    final = rec.of("message_end")[-1].message
    assert final.text() == "Hello there" and final.stop_reason == "stop"
    assert final.usage.output > 0 and final.usage.total_tokens > 0
    assert rec.of("turn_end")[0].message is final and rec.of("turn_end")[0].tool_results == []
    assert [m.role for m in rec.of("agent_end")[0].messages] == ["user", "assistant"]
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]
    assert not agent.state.is_streaming


async def test_two_turn_tool_loop():
    faux = FauxProvider([tool_reply(("sleep", {"n": 1})), text_reply("all done")])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    await agent.prompt("go")
    assert rec.types() == [
        "agent_start", "turn_start", "message_start", "message_end",
        "message_start", "message_end",  # assistant with the tool call
        "tool_execution_start", "tool_execution_end",
        "message_start", "message_end",  # tool result
        "turn_end", "turn_start",
        "message_start", "message_end",  # final assistant
        "turn_end", "agent_end",
    ]
    first_turn = rec.of("turn_end")[0]
    assert first_turn.message.tool_calls()[0].name == "sleep"
    assert [r.content[0].text for r in first_turn.tool_results] == ["done 1"]
    assert rec.of("tool_execution_end")[0].duration_ms is not None
    # The second request carried the tool result to the model.
    assert [m.role for m in faux.requests[1].messages] == ["user", "assistant", "toolResult"]
    assert faux.requests[1].tools[0].name == "sleep"


async def test_parallel_tools_end_in_completion_order_results_in_call_order():
    faux = FauxProvider([
        tool_reply(("sleep", {"n": 1, "delay": 0.15}, "a"), ("sleep", {"n": 2, "delay": 0.01}, "b"),
                   ("sleep", {"n": 3, "delay": 0.08}, "c")),
        text_reply("ok"),
    ])
    agent = Agent(faux.model(), tools=[sleeper()])
    rec = Recorder(agent)
    await agent.prompt("go")
    assert [e.tool_call_id for e in rec.of("tool_execution_start")] == ["a", "b", "c"]
    assert [e.tool_call_id for e in rec.of("tool_execution_end")] == ["b", "c", "a"]
    results = rec.of("turn_end")[0].tool_results
    assert [r.tool_call_id for r in results] == ["a", "b", "c"]
    # concurrent: all three had started before the first ended (not a time, which a loaded host stretches)
    kinds = [e.type for e in rec.events if e.type.startswith("tool_execution_") and e.type != "tool_execution_update"]
    assert kinds == ["tool_execution_start"] * 3 + ["tool_execution_end"] * 3


async def test_sequential_tool_runs_alone():
    log = []
    faux = FauxProvider([
        tool_reply(("par", {"n": 1, "delay": 0.03}, "a"), ("seq", {"n": 2, "delay": 0.01}, "b"),
                   ("par", {"n": 3, "delay": 0.0}, "c")),
        text_reply("ok"),
    ])
    agent = Agent(faux.model(), tools=[sleeper("par", log=log), sleeper("seq", sequential=True, log=log)])
    await agent.prompt("go")
    assert log == [("start", 1), ("end", 1), ("start", 2), ("end", 2), ("start", 3), ("end", 3)]


async def test_invalid_arguments_unknown_tool_and_raising_tool_become_error_results():
    async def boom(args, **kw):
        raise RuntimeError("disk on fire")

    faux = FauxProvider([
        tool_reply(("sleep", {"n": "five"}, "bad"), ("nope", {}, "unknown"), ("boom", {}, "raise"),
                   ("sleep", {"n": "5"}, "coerced")),
        text_reply("ok"),
    ])
    agent = Agent(faux.model(), tools=[sleeper(), FunctionTool("boom", "b", {"type": "object"}, boom)])
    rec = Recorder(agent)
    await agent.prompt("go")
    results = {r.tool_call_id: r for r in rec.of("turn_end")[0].tool_results}
    assert results["bad"].is_error and "n" in results["bad"].content[0].text
    assert "not of type 'integer'" in results["bad"].content[0].text
    assert results["unknown"].is_error and "'nope' does not exist" in results["unknown"].content[0].text
    assert "sleep" in results["unknown"].content[0].text  # lists what is available
    assert results["raise"].is_error and "disk on fire" in results["raise"].content[0].text
    assert not results["coerced"].is_error and results["coerced"].content[0].text == "done 5"
    # The run went on to the next model request: errors are results, not exceptions.
    assert agent.state.messages[-1].text() == "ok"


async def test_length_truncated_tool_calls_are_not_executed():
    ran = []

    async def record(args, **kw):
        ran.append(args)
        return "ran"

    truncated = AssistantMessage(content=[ToolCall(id="t", name="rec", arguments={})], stop_reason="length")
    faux = FauxProvider([truncated, text_reply("sorry")])
    agent = Agent(faux.model(), tools=[FunctionTool("rec", "r", {"type": "object"}, record)])
    rec = Recorder(agent)
    await agent.prompt("go")
    assert ran == []
    result = rec.of("turn_end")[0].tool_results[0]
    assert result.is_error and "cut off" in result.content[0].text
    assert len(faux.requests) == 2  # the model was asked again, with the error result


async def test_before_hook_blocks_and_after_hook_replaces():
    async def before(ctx, cancel):
        return "writes are not allowed here" if ctx.args["n"] == 1 else None

    async def after(ctx, result, is_error):
        if ctx.args["n"] == 2:
            return ToolResult.text("replaced", details={"by": "hook"})
        return None

    faux = FauxProvider([tool_reply(("sleep", {"n": 1}, "x"), ("sleep", {"n": 2}, "y"), ("sleep", {"n": 3}, "z")),
                         text_reply("ok")])
    agent = Agent(faux.model(), tools=[sleeper()], before_tool_call=before, after_tool_call=after)
    rec = Recorder(agent)
    await agent.prompt("go")
    results = {r.tool_call_id: r for r in rec.of("turn_end")[0].tool_results}
    assert results["x"].is_error and "writes are not allowed here" in results["x"].content[0].text
    assert results["y"].content[0].text == "replaced" and results["y"].details == {"by": "hook"}
    assert results["z"].content[0].text == "done 3"


async def test_tool_updates_stream_as_events():
    async def progress(args, *, on_update, **kw):
        await on_update(ToolResult.text("half"))
        return "full"

    faux = FauxProvider([tool_reply(("p", {})), text_reply("ok")])
    agent = Agent(faux.model(), tools=[FunctionTool("p", "p", {"type": "object"}, progress)])
    rec = Recorder(agent)
    await agent.prompt("go")
    updates = rec.of("tool_execution_update")
    assert len(updates) == 1 and updates[0].partial_result.content[0].text == "half"
    assert rec.types().index("tool_execution_update") < rec.types().index("tool_execution_end")


async def test_subscribers_see_consistent_state_in_order():
    seen = []
    gate = asyncio.Event()

    async def slow_tool(args, **kw):
        await gate.wait()
        return "ok"

    faux = FauxProvider([tool_reply(("slow", {}, "s1")), text_reply("done")], chunk_size=2)
    agent = Agent(faux.model(), tools=[FunctionTool("slow", "s", {"type": "object"}, slow_tool)],
                  system_prompt="be brief", thinking_level="low")
    order = []

    async def first(event):
        await asyncio.sleep(0)
        order.append(("first", event.type))
        if event.type == "message_update":
            seen.append((agent.state.is_streaming, agent.state.streaming_message is not None))
        if event.type == "tool_execution_start":
            seen.append(("pending", set(agent.state.pending_tool_calls)))
            gate.set()

    def second(event):
        order.append(("second", event.type))

    agent.subscribe(first)
    agent.subscribe(second)
    await agent.prompt("go")
    assert order[0] == ("first", "agent_start") and order[1] == ("second", "agent_start")
    assert all(order[i][0] == "first" and order[i + 1][0] == "second" for i in range(0, len(order), 2))
    assert (True, True) in seen and ("pending", {"s1"}) in seen
    assert agent.state.system_prompt == "be brief" and agent.state.thinking_level == "low"
    assert agent.state.tools[0].name == "slow" and agent.state.pending_tool_calls == set()
    assert agent.state.streaming_message is None


async def test_provider_error_ends_the_run_and_sets_last_error():
    failing = AssistantMessage(content=[TextContent(text="par")], stop_reason="error", error_message="429 slow down")
    faux = FauxProvider([failing])
    agent = Agent(faux.model())
    rec = Recorder(agent)
    await agent.prompt("go")
    final = rec.of("message_end")[-1].message
    assert final.stop_reason == "error" and final.error_message == "429 slow down"
    assert final.text() == "par"  # what streamed before the error is kept
    assert agent.state.error == "429 slow down"
    assert rec.types()[-2:] == ["turn_end", "agent_end"]
