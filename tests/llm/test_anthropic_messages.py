"""anthropic-messages against a real loopback server speaking the Messages SSE format."""

import asyncio
import json
import time

from loopback import Reply, anthropic_error, anthropic_message, anthropic_sse
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.errors import is_context_overflow, is_retryable
from pi_daemon.llm.model import Context, Model, ModelCost, StreamOptions, ToolSpec
from pi_daemon.llm.stream import stream
from pi_daemon.messages import (AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall,
                                ToolResultMessage, UserMessage)


def model(server, **kw) -> Model:
    fields = dict(id="claude-test", provider="anthropic", api="anthropic-messages", base_url=server.url,
                  reasoning=True, input=["text", "image"], context_window=200_000, max_tokens=32_000,
                  cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75))
    fields.update(kw)
    return Model(**fields)


async def run(m, context=None, options=None, cancel=None):
    context = context or Context(system_prompt="You are terse.", messages=[UserMessage(content="hi")])
    return [e async for e in stream(m, context, options or StreamOptions(api_key="sk-ant"), cancel or CancelToken())]


def text_block(text: str, pieces: int = 3) -> dict:
    size = max(1, len(text) // pieces)
    return {"start": {"type": "text", "text": ""},
            "deltas": [{"type": "text_delta", "text": text[i:i + size]} for i in range(0, len(text), size)]}


async def test_text_thinking_signature_and_usage(server):
    server.script(Reply(body=anthropic_message([
        {"start": {"type": "thinking", "thinking": ""},
         "deltas": [{"type": "thinking_delta", "thinking": "Consider "}, {"type": "thinking_delta", "thinking": "it."},
                    {"type": "signature_delta", "signature": "EqQBCgIYAhIM"}]},
        {"start": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}},
        text_block("Here you go."),
    ], input_tokens=100, output_tokens=40, cache_read=1000, cache_write=200)))
    events = await run(model(server), options=StreamOptions(api_key="sk-ant", thinking_level="medium"))
    final = events[-1].message
    thinking, redacted, text = final.content
    assert (thinking.thinking, thinking.thinking_signature) == ("Consider it.", "EqQBCgIYAhIM")
    assert redacted.redacted is True and redacted.thinking_signature == "EmwKAhgBEgy3va"
    assert text.text == "Here you go." and final.stop_reason == "stop"
    usage = final.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (100, 40, 1000, 200)
    assert abs(usage.cost.total - (100 * 3 + 40 * 15 + 1000 * 0.3 + 200 * 3.75) / 1e6) < 1e-12
    request = server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant" and request.headers["anthropic-version"] == "2023-06-01"
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    assert request.body["system"] == [{"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}]
    assert request.body["messages"] == [{"role": "user", "content": [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]


async def test_tool_use_with_input_json_delta(server):
    arguments = json.dumps({"path": "src/a.py", "edits": [{"oldText": "x", "newText": "y"}]})
    deltas = [{"type": "input_json_delta", "partial_json": arguments[i:i + 4]} for i in range(0, len(arguments), 4)]
    server.script(Reply(body=anthropic_message([
        text_block("Editing."),
        {"start": {"type": "tool_use", "id": "toolu_01", "name": "edit", "input": {}}, "deltas": deltas},
        {"start": {"type": "tool_use", "id": "toolu_02", "name": "ls", "input": {}},
         "deltas": [{"type": "input_json_delta", "partial_json": ""}]},
    ], stop_reason="tool_use"), piece=11))
    final = (await run(model(server)))[-1].message
    assert final.stop_reason == "toolUse"
    calls = final.tool_calls()
    assert [(c.id, c.name) for c in calls] == [("toolu_01", "edit"), ("toolu_02", "ls")]
    assert calls[0].arguments == json.loads(arguments) and calls[1].arguments == {}


async def test_stop_reasons(server):
    for reason, expected in (("max_tokens", "length"), ("stop_sequence", "stop"), ("refusal", "error")):
        server.script(Reply(body=anthropic_message([text_block("partial")], stop_reason=reason)))
        final = (await run(model(server)))[-1]
        message = final.message if final.type == "done" else final.error
        assert message.stop_reason == expected, reason
    assert "declined" in message.error_message


async def test_http_errors_and_retry_after(server):
    server.script(anthropic_error(529, "overloaded_error", "Overloaded"))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "529 Overloaded" and is_retryable(final)
    server.script(anthropic_error(429, "rate_limit_error", "Number of request tokens has exceeded your limit.",
                                  {"retry-after": "3"}))
    final = (await run(model(server)))[-1].error
    assert final.error_message.startswith("429 Number of request tokens") and final.error_detail.retry_after_s == 3
    server.script(anthropic_error(401, "authentication_error", "invalid x-api-key"))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "401 invalid x-api-key" and not is_retryable(final)
    server.script(anthropic_error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"))
    final = (await run(model(server)))[-1].error
    assert is_context_overflow(final) and not is_retryable(final)


async def test_error_event_mid_stream(server):
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [],
                                              "model": "c", "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Starting"}},
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    ]
    server.script(Reply(body=anthropic_sse(events)))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "overloaded_error: Overloaded" and is_retryable(final)
    assert final.text() == "Starting" and final.usage.input == 5


async def test_stream_cut_before_message_stop(server):
    body = anthropic_message([text_block("a long answer that is cut")])
    server.script(Reply(body=body[: body.index(b"event: message_delta")]))
    final = (await run(model(server)))[-1].error
    assert "before message_stop" in final.error_message and final.text() == "a long answer that is cut"
    assert is_retryable(final)


async def test_abort_mid_stream(server):
    body = anthropic_message([text_block("word " * 200, pieces=200)])
    server.script(Reply(body=body, piece=50, stall_after=1500))
    cancel = CancelToken()
    events = []
    async for event in stream(model(server), Context(messages=[UserMessage(content="go")]), StreamOptions(), cancel):
        events.append(event)
        if len(events) == 5:
            started = time.monotonic()
            cancel.cancel()
    final = events[-1].error
    assert final.stop_reason == "aborted" and final.text().startswith("word")
    for _ in range(50):
        if server.requests[0].closed_at:
            break
        await asyncio.sleep(0.01)
    assert server.requests[0].closed_at - started < 0.3


async def test_conversation_conversion_and_caching(server):
    server.script(Reply(body=anthropic_message([text_block("ok")])))
    context = Context(
        system_prompt="sys",
        messages=[
            UserMessage(content=[TextContent(text="look"), ImageContent(data="QUJD", mime_type="image/png")]),
            AssistantMessage(content=[ThinkingContent(thinking="t", thinking_signature="sig"),
                                      ToolCall(id="call:1/x", name="read", arguments={"path": "a"}),
                                      ToolCall(id="call_2", name="ls", arguments={})],
                             api="anthropic-messages", stop_reason="toolUse"),
            ToolResultMessage(tool_call_id="call:1/x", tool_name="read", content=[TextContent(text="body")]),
            ToolResultMessage(tool_call_id="call_2", tool_name="ls", content=[TextContent(text="boom")], is_error=True),
            UserMessage(content="and now?"),
        ],
        tools=[ToolSpec(name="read", description="Read", parameters={"type": "object"})],
    )
    await run(model(server), context, StreamOptions(thinking_level="off", temperature=0.2))
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": "QUJD"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "t", "signature": "sig"},
            {"type": "tool_use", "id": "call_1_x", "name": "read", "input": {"path": "a"}},
            {"type": "tool_use", "id": "call_2", "name": "ls", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1_x", "content": [{"type": "text", "text": "body"}],
             "is_error": False},
            {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "boom"}],
             "is_error": True},
            {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}}]},
    ]
    assert body["tools"] == [{"name": "read", "description": "Read", "input_schema": {"type": "object"}}]
    assert "thinking" not in body and body["temperature"] == 0.2


async def test_thinking_from_another_provider_is_not_replayed(server):
    server.script(Reply(body=anthropic_message([text_block("ok")])))
    other = AssistantMessage(content=[ThinkingContent(thinking="foreign"), TextContent(text="prior")],
                             api="openai-completions")
    await run(model(server), Context(messages=[UserMessage(content="a"), other, UserMessage(content="b")]))
    assert server.requests[0].body["messages"][1] == {"role": "assistant", "content": [{"type": "text", "text": "prior"}]}
