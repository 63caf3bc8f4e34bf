import json

import pytest

from pi_daemon.converter import to_wire
from pi_daemon.messages import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UnknownMessage,
    Usage,
    UserMessage,
    message_from_wire,
    role_to_llm,
)


def roundtrip(message):
    wire = json.loads(json.dumps(to_wire(message)))
    return wire, message_from_wire(wire)


def test_assistant_message_is_camel_case_and_round_trips():
    message = AssistantMessage(
        content=[
            ThinkingContent(thinking="hmm", thinking_signature="sig"),
            TextContent(text="hi"),
            ToolCall(id="c1", name="read", arguments={"path": "a.py"}),
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        usage=Usage(input=3, output=4, cache_read=1, total_tokens=8),
        stop_reason="toolUse",
        error_message=None,
        timestamp=5,
    )
    wire, back = roundtrip(message)
    assert wire["stopReason"] == "toolUse"
    assert wire["usage"]["cacheRead"] == 1 and wire["usage"]["totalTokens"] == 8
    assert wire["content"][0] == {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"}
    assert "errorMessage" not in wire  # None fields are left off the wire
    assert back == message


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(content="plain", timestamp=1),
        UserMessage(content=[TextContent(text="look"), ImageContent(data="QUJD", mime_type="image/png")], timestamp=1),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")], details={"a": 1}, is_error=True, timestamp=2),
        BashExecutionMessage(command="ls", output="a\n", exit_code=0, timestamp=3),
        CustomMessage(custom_type="note", content="remember", display=False, details=[1], timestamp=4),
        CompactionSummaryMessage(summary="s", tokens_before=100, timestamp=5),
        BranchSummaryMessage(summary="b", from_id="e1", timestamp=6),
    ],
)
def test_every_role_round_trips(message):
    wire, back = roundtrip(message)
    assert back == message
    assert to_wire(back) == wire


def test_unknown_role_survives_round_trip_unchanged():
    data = {
        "role": "futureRole",
        "someField": {"nested": [1, 2, {"jsonrpc": "2.0"}]},
        "snake_case_key": True,
        "timestamp": 99,
    }
    message = message_from_wire(json.loads(json.dumps(data)))
    assert isinstance(message, UnknownMessage)
    assert message.role == "futureRole"
    assert to_wire(message) == data
    assert role_to_llm(message) is None  # the model never sees an unknown role


def test_bad_content_block_is_a_clear_error():
    with pytest.raises(Exception) as info:
        message_from_wire({"role": "user", "content": [{"type": "toolCall"}], "timestamp": 1})
    assert "content" in str(info.value) or info.value.exceptions


def test_application_roles_convert_to_user_text():
    bash = role_to_llm(BashExecutionMessage(command="ls", output="a.py\n", exit_code=0))
    assert isinstance(bash, UserMessage) and "ls" in bash.content[0].text and "a.py" in bash.content[0].text
    assert role_to_llm(BashExecutionMessage(command="ls", exclude_from_context=True)) is None
    summary = role_to_llm(CompactionSummaryMessage(summary="GOAL: x", tokens_before=10))
    assert "GOAL: x" in summary.content[0].text
    custom = role_to_llm(CustomMessage(custom_type="n", content="extra"))
    assert custom.content == "extra"
    branch = role_to_llm(BranchSummaryMessage(summary="tried y"))
    assert "tried y" in branch.content[0].text
