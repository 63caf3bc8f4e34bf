"""The chat-completions request body: what a long session sends is what a fresh conversion sends."""

import gc
import json

from pi_daemon.llm import openai_completions as oc
from pi_daemon.llm.http import encode_json
from pi_daemon.llm.model import Context, Model, StreamOptions
from pi_daemon.messages import (
    AssistantMessage, ImageContent, TextContent, ToolCall, ToolResultMessage, UserMessage,
)


def model(**compat) -> Model:
    return Model(id="m", provider="local", api="openai-completions", base_url="http://127.0.0.1:1/v1",
                 input=["text", "image"], compat=compat or None)


def history() -> list:
    return [
        UserMessage(content="read it 😀"),
        AssistantMessage(content=[TextContent(text="sure"), ToolCall(id="c1", name="read", arguments={"path": "a"})],
                         stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="c1", tool_name="read",
                          content=[TextContent(text="A"), ImageContent(data="AAAA", mime_type="image/png")]),
        ToolResultMessage(tool_call_id="c2", tool_name="read", content=[]),
        UserMessage(content=[TextContent(text="and this"), ImageContent(data="BBBB")]),
        AssistantMessage(content=[TextContent(text="")], stop_reason="stop"),  # nothing to send: left out
        UserMessage(content="thanks"),
    ]


def sent(m: Model, messages: list) -> dict:
    return json.loads(encode_json(oc.build_body(m, Context(system_prompt="sys", messages=messages), StreamOptions())))


def test_the_encoded_body_equals_the_plain_conversion_on_every_request():
    messages = history()
    for m in (model(), model(requiresToolResultName=True), model(requiresNonNullAssistantContent=True)):
        plain = oc.convert_messages(m, Context(system_prompt="sys", messages=messages))
        assert sent(m, messages)["messages"] == plain  # first request: encoded now
        assert sent(m, messages)["messages"] == plain  # later requests: encoded before
    body = sent(model(), messages)
    assert body["messages"][1]["content"] == "read it 😀"
    assert any(isinstance(x["content"], list) and x["content"][-1].get("image_url") for x in body["messages"])


def test_a_lone_surrogate_is_escaped_not_fatal():
    messages = [UserMessage(content="half \ud83d of a pair")]
    raw = encode_json(oc.build_body(model(), Context(messages=messages), StreamOptions()))
    assert json.loads(raw)["messages"][0]["content"] == "half \ud83d of a pair"


def test_encoded_messages_are_forgotten_with_their_messages():
    messages = [UserMessage(content=f"message {n}") for n in range(50)]
    sent(model(), messages)
    before = len(oc._encoded)
    del messages
    gc.collect()
    assert len(oc._encoded) <= before - 50


def tool_turn(n: int, image: bool) -> list:
    call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})
    content = [TextContent(text=f"content {n}")] + ([ImageContent(data="CCCC", mime_type="image/png")] if image else [])
    return [AssistantMessage(content=[call], stop_reason="toolUse"),
            ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", content=content)]


def test_a_growing_tool_loop_sends_what_a_fresh_conversion_sends_on_every_turn():
    m = model()
    one, other = [UserMessage(content="go")], [UserMessage(content="another conversation")]
    for n in range(12):
        one += tool_turn(n, image=n % 4 == 1)  # images move after their run of results
        if n % 3 == 2:
            one.append(UserMessage(content=f"steer {n}"))
        if n % 4 == 1:  # a request sent between two results of one run of them
            assert sent(m, one)["messages"] == oc.convert_messages(m, Context(system_prompt="sys", messages=one))
            one.append(ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="more")]))
        plain = oc.convert_messages(m, Context(system_prompt="sys", messages=one))
        assert sent(m, one)["messages"] == plain
        if n % 5 == 4:  # another conversation in between, then this one again
            other += tool_turn(100 + n, image=False)
            assert sent(m, other)["messages"] == oc.convert_messages(m, Context(system_prompt="sys", messages=other))
    compacted = [UserMessage(content="summary")] + one[-5:]  # not a continuation of what was sent
    assert sent(m, compacted)["messages"] == oc.convert_messages(m, Context(system_prompt="sys", messages=compacted))
    shape = model(requiresToolResultName=True)  # another wire shape: not the prefix of the other
    assert sent(shape, one)["messages"] == oc.convert_messages(shape, Context(system_prompt="sys", messages=one))


def test_the_sent_prefix_lets_its_messages_go():
    messages = [UserMessage(content=f"message {n}") for n in range(50)] + tool_turn(1, image=False)
    sent(model(), messages)
    del messages
    gc.collect()
    fresh = [UserMessage(content=f"message {n}") for n in range(50)]  # may reuse the freed ids
    assert sent(model(), fresh)["messages"][1:] == [{"role": "user", "content": f"message {n}"} for n in range(50)]
