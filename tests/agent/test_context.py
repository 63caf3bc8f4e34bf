"""Converters run before every request; history is never modified; repairs are applied."""

from pi_daemon.agent import Agent, convert_with_roles, repair_for_provider
from pi_daemon.agent.context import per_message
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CustomMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UnknownMessage,
    UserMessage,
    user_text,
)

from helpers import sleeper


async def test_transform_and_convert_run_before_every_request_without_touching_history():
    calls = []

    async def transform(messages, cancel):
        calls.append(("transform", len(messages)))
        return [m for m in messages if not (m.role == "user" and user_text(m) == "noise")]

    def convert(messages):
        calls.append(("convert", len(messages)))
        return convert_with_roles(messages)

    faux = FauxProvider([tool_reply(("sleep", {"n": 1})), text_reply("done")])
    history = [UserMessage(content="noise"), CustomMessage(custom_type="hint", content="use tabs"),
               UnknownMessage({"role": "future", "x": 1})]
    agent = Agent(faux.model(), tools=[sleeper()], messages=history, transform_context=transform,
                  convert_to_llm=convert)
    await agent.prompt("go")
    # Two model requests (the second after the tool result), each preceded by both steps.
    assert calls == [("transform", 4), ("convert", 3), ("transform", 6), ("convert", 5)]
    first = faux.requests[0].messages
    assert [user_text(m) for m in first] == ["use tabs", "go"]  # custom role became user text
    assert [m.role for m in agent.state.messages][:3] == ["user", "custom", "future"]
    assert user_text(agent.state.messages[0]) == "noise"  # stored history untouched


async def test_default_converter_keeps_only_llm_roles():
    faux = FauxProvider([text_reply("ok")])
    agent = Agent(faux.model(), messages=[BashExecutionMessage(command="ls", output="x")])
    await agent.prompt("go")
    assert [m.role for m in faux.requests[0].messages] == ["user"]


def test_repair_drops_failed_turns_and_answers_orphaned_calls():
    failed = AssistantMessage(content=[ToolCall(id="x", name="t")], stop_reason="error")
    orphan_call = AssistantMessage(content=[ToolCall(id="a", name="t"), ToolCall(id="b", name="t")],
                                   stop_reason="toolUse")
    messages = [
        UserMessage(content="1"),
        failed,
        ToolResultMessage(tool_call_id="x", tool_name="t"),  # answers a dropped turn
        UserMessage(content="2"),
        orphan_call,
        ToolResultMessage(tool_call_id="b", tool_name="t", content=[TextContent(text="B")]),
        UserMessage(content="3"),
        AssistantMessage(content=[TextContent(text="half")], stop_reason="aborted"),
    ]
    repaired = repair_for_provider(messages)
    assert [m.role for m in repaired] == ["user", "user", "assistant", "toolResult", "toolResult", "user"]
    results = [m for m in repaired if m.role == "toolResult"]
    assert [r.tool_call_id for r in results] == ["b", "a"]
    assert results[1].is_error and "No result" in results[1].content[0].text
    assert len(messages) == 8 and messages[1] is failed  # input list untouched


async def test_aborted_turn_is_not_sent_to_the_provider_next_time():
    faux = FauxProvider([AssistantMessage(content=[TextContent(text="oops")], stop_reason="error",
                                          error_message="boom"), text_reply("fine")])
    agent = Agent(faux.model())
    await agent.prompt("one")
    await agent.prompt("two")
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]
    assert [m.role for m in faux.requests[1].messages] == ["user", "user"]


def test_repair_with_a_memo_gives_the_same_result_as_repairing_from_scratch():
    from pi_daemon.agent.context import RepairMemo

    history = [
        UserMessage(content="1"),
        AssistantMessage(content=[ToolCall(id="a", name="t"), ToolCall(id="b", name="t")], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="a", tool_name="t"),  # "b" is still open when the history stops here
        ToolResultMessage(tool_call_id="b", tool_name="t"),
        AssistantMessage(content=[ToolCall(id="c", name="t")], stop_reason="error"),
        ToolResultMessage(tool_call_id="c", tool_name="t"),  # answers a dropped turn
        ToolResultMessage(tool_call_id="a", tool_name="t"),  # answered twice
        UserMessage(content="2"),
        AssistantMessage(content=[TextContent(text="ok")]),
    ]
    memo = RepairMemo()
    for n in range(1, len(history) + 1):  # the history grows one message at a time, as in a run
        assert repair_for_provider(history[:n], memo) == repair_for_provider(history[:n])
    # A history that was rewritten (compacted, another branch) is repaired from scratch.
    rewritten = [UserMessage(content="summary"), *history[6:]]
    assert repair_for_provider(rewritten, memo) == repair_for_provider(rewritten)
    assert [m.role for m in repair_for_provider(rewritten, memo)] == ["user", "user", "assistant"]


async def test_a_per_message_converter_converts_each_message_of_a_run_once():
    """A tool loop's later requests convert only what was added, and send the same as a full conversion."""
    converted = []

    @per_message
    def convert(messages):
        converted.extend(messages)
        return convert_with_roles(messages)

    faux = FauxProvider([tool_reply(("sleep", {"n": 1})), tool_reply(("sleep", {"n": 1})), text_reply("done")])
    history = [UserMessage(content="a"), CustomMessage(custom_type="hint", content="use tabs")]
    agent = Agent(faux.model(), tools=[sleeper()], messages=history, convert_to_llm=convert)
    await agent.prompt("go")
    assert len(faux.requests) == 3
    assert len(converted) == len({id(m) for m in converted}) == 7  # 3 before the first request, 2 per tool turn
    whole = [repair_for_provider(convert_with_roles(agent.state.messages[:n])) for n in (3, 5, 7)]
    assert [request.messages for request in faux.requests] == whole
    # A converter not marked per_message sees the whole history before every request.
    seen = []
    faux = FauxProvider([tool_reply(("sleep", {"n": 1})), text_reply("done")])
    agent = Agent(faux.model(), tools=[sleeper()], convert_to_llm=lambda m: seen.append(len(m)) or convert_with_roles(m))
    await agent.prompt("go")
    assert seen == [1, 3]
