"""openai-completions against a real loopback server speaking the chat-completions SSE format."""

import asyncio
import json
import time

from loopback import Reply, openai_chunk, openai_error, openai_sse, openai_text, openai_usage
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.errors import is_context_overflow, is_retryable
from pi_daemon.llm.model import Context, Model, ModelCost, StreamOptions, ToolSpec
from pi_daemon.llm.stream import stream
from pi_daemon.messages import (AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall,
                                ToolResultMessage, UserMessage)


def model(server, **kw) -> Model:
    fields = dict(id="gpt-test", provider="local", api="openai-completions", base_url=server.url + "/v1",
                  cost=ModelCost(input=2.0, output=8.0, cache_read=0.5), context_window=1000, max_tokens=256,
                  input=["text", "image"])
    fields.update(kw)
    return Model(**fields)


async def run(m, context=None, options=None, cancel=None):
    context = context or Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])
    return [e async for e in stream(m, context, options or StreamOptions(api_key="sk-test"), cancel or CancelToken())]


async def test_plain_text_usage_cost_and_request_shape(server):
    server.script(Reply(body=openai_text("Hello there, friend!", pieces=4, usage=(1000, 50))))
    events = await run(model(server))
    final = events[-1].message
    assert [e.type for e in events][:3] == ["start", "text_start", "text_delta"] and events[-1].type == "done"
    assert final.text() == "Hello there, friend!" and final.stop_reason == "stop"
    assert (final.usage.input, final.usage.output, final.usage.total_tokens) == (1000, 50, 1050)
    assert abs(final.usage.cost.total - (1000 * 2 + 50 * 8) / 1e6) < 1e-12
    request = server.requests[0]
    assert request.path == "/v1/chat/completions" and request.headers["authorization"] == "Bearer sk-test"
    assert request.body["stream"] is True and request.body["stream_options"] == {"include_usage": True}
    assert request.body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert request.body["max_tokens"] == 256


async def test_cached_tokens_are_cache_reads(server):
    server.script(Reply(body=openai_sse([openai_chunk({"content": "x"}, "stop"),
                                         openai_chunk(None, usage=openai_usage(100, 3, cached=60))])))
    final = (await run(model(server)))[-1].message
    assert (final.usage.input, final.usage.cache_read, final.usage.output) == (40, 60, 3)


async def test_reasoning_is_streamed_as_thinking(server):
    server.script(Reply(body=openai_sse([
        openai_chunk({"role": "assistant", "reasoning_content": "Let me "}),
        openai_chunk({"reasoning_content": "think."}),
        openai_chunk({"reasoning": " More."}),
        openai_chunk({"content": "Answer."}),
        openai_chunk({}, "stop"),
    ])))
    events = await run(model(server, reasoning=True), options=StreamOptions(thinking_level="high"))
    final = events[-1].message
    assert isinstance(final.content[0], ThinkingContent) and final.content[0].thinking == "Let me think. More."
    assert final.text() == "Answer."
    assert [e.type for e in events if e.type.startswith("thinking")][-1] == "thinking_end"
    body = server.requests[0].body
    assert "reasoning_effort" not in body  # not an official OpenAI URL and not enabled by compat


def tool_call_chunks(calls: list[tuple[int, str, str, str]], split: int = 3) -> list[dict]:
    chunks = []
    for index, call_id, name, arguments in calls:
        chunks.append(openai_chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                     "function": {"name": name, "arguments": ""}}]}))
    for index, _, _, arguments in calls:
        for i in range(0, len(arguments), split):
            chunks.append(openai_chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[i:i + split]}}]}))
    chunks.append(openai_chunk({}, "tool_calls"))
    return chunks


async def test_tool_calls_assembled_across_many_chunks(server):
    args_a = json.dumps({"path": "src/main.py", "offset": 10, "note": "ünïcode \u2028 sep"})
    args_b = json.dumps({"command": "ls -la"})
    server.script(Reply(body=openai_sse(tool_call_chunks([(0, "call_a", "read", args_a), (1, "call_b", "bash", args_b)])),
                        piece=5))
    events = await run(model(server))
    final = events[-1].message
    assert final.stop_reason == "toolUse"
    calls = final.tool_calls()
    assert [(c.id, c.name) for c in calls] == [("call_a", "read"), ("call_b", "bash")]
    assert calls[0].arguments == json.loads(args_a) and calls[1].arguments == {"command": "ls -la"}
    assert len([e for e in events if e.type == "toolcall_delta"]) > 10
    assert [e.type for e in events].count("toolcall_end") == 2


async def test_finish_reasons(server):
    for finish, expected in (("length", "length"), ("content_filter", "error")):
        server.script(Reply(body=openai_sse([openai_chunk({"content": "cut"}), openai_chunk({}, finish)])))
        final = (await run(model(server)))[-1]
        message = final.message if final.type == "done" else final.error
        assert message.stop_reason == expected, finish
        assert message.text() == "cut"
    assert "content_filter" in message.error_message


async def test_stream_without_finish_reason_is_an_error(server):
    server.script(Reply(body=openai_sse([openai_chunk({"content": "half an ans"})])))
    final = (await run(model(server)))[-1]
    assert final.type == "error" and "without a finish reason" in final.error.error_message
    assert final.error.text() == "half an ans"


async def test_http_errors_keep_the_providers_message(server):
    server.script(openai_error(401, "Incorrect API key provided: sk-test.", type_="invalid_request_error",
                               code="invalid_api_key"))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "401 Incorrect API key provided: sk-test."
    assert not is_retryable(final)
    server.script(openai_error(429, "Rate limit reached for requests", type_="requests", headers={"retry-after": "7"}))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "429 Rate limit reached for requests"
    assert is_retryable(final) and final.error_detail.retry_after_s == 7
    server.script(Reply(500, b"upstream exploded", "text/plain"))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "500 upstream exploded" and is_retryable(final)


async def test_mid_stream_error_object(server):
    server.script(Reply(body=openai_sse([openai_chunk({"content": "ok so"}),
                                         {"error": {"message": "upstream overloaded", "type": "server_error"}}],
                                        done=False)))
    final = (await run(model(server)))[-1].error
    assert final.error_message == "upstream overloaded" and final.text() == "ok so"


async def test_context_overflow_error_and_silent_overflow(server):
    server.script(openai_error(400, "This model's maximum context length is 1000 tokens. However, your messages "
                               "resulted in 1300 tokens.", code="context_length_exceeded"))
    final = (await run(model(server)))[-1].error
    assert is_context_overflow(final) and not is_retryable(final)
    server.script(Reply(body=openai_text("ok", usage=(1500, 1))))  # a server that truncated silently
    answer = (await run(model(server)))[-1].message
    assert answer.stop_reason == "stop" and is_context_overflow(answer, context_window=1000)
    assert not is_context_overflow(answer, context_window=2000)


async def test_mid_stream_disconnect_keeps_partial_and_is_retryable(server):
    body = openai_sse([openai_chunk({"content": "The first part "}), openai_chunk({"content": "and more"}),
                       openai_chunk({}, "stop")])
    server.script(Reply(body=body, drop_after=len(body) // 2 + 40, piece=20))
    final = (await run(model(server)))[-1].error
    assert final.stop_reason == "error" and final.text().startswith("The first part")
    assert "connection lost" in final.error_message and is_retryable(final)


async def test_abort_mid_stream_closes_the_connection_at_once(server):
    body = openai_sse([openai_chunk({"content": "tick "}) for _ in range(50)] + [openai_chunk({}, "stop")])
    server.script(Reply(body=body, piece=30, stall_after=600))
    cancel = CancelToken()
    events = []
    started = None
    async for event in stream(model(server), Context(messages=[UserMessage(content="go")]), StreamOptions(), cancel):
        events.append(event)
        if event.type == "text_delta" and len(events) == 4:
            started = time.monotonic()
            asyncio.get_running_loop().call_later(0.05, cancel.cancel)
    final = events[-1].error
    assert final.stop_reason == "aborted" and final.text().startswith("tick tick")
    for _ in range(50):
        if server.requests[0].closed_at:
            break
        await asyncio.sleep(0.01)
    assert server.requests[0].closed_at - started < 0.3  # the server saw the connection go


async def test_connection_refused_and_idle_timeout(server):
    final = (await run(model(server, base_url="http://127.0.0.1:9/v1")))[-1].error
    assert final.error_message == ("connection refused by http://127.0.0.1:9/v1/chat/completions: "
                                   "is the server running?")
    assert not is_retryable(final)  # nothing listens on that local port: waiting will not change it
    server.script(Reply(body=openai_text("slow answer"), stall_after=30))
    started = time.monotonic()
    final = (await run(model(server, read_timeout=0.3)))[-1].error
    assert "idle read timeout" in final.error_message
    assert time.monotonic() - started < 15  # not the 30 s stall (a loaded host is slow, not that slow)


async def test_conversation_conversion(server):
    server.script(Reply(body=openai_text("fine")))
    context = Context(
        system_prompt="sys",
        messages=[
            UserMessage(content=[TextContent(text="look"), ImageContent(data="QUJD", mime_type="image/png")]),
            AssistantMessage(content=[ThinkingContent(thinking="hidden"), TextContent(text="Reading."),
                                      ToolCall(id="c1", name="read", arguments={"path": "a"})], stop_reason="toolUse"),
            ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="file body")]),
            UserMessage(content="thanks"),
        ],
        tools=[ToolSpec(name="read", description="Read a file", parameters={"type": "object"})],
    )
    await run(model(server, reasoning=True, compat={"supportsReasoningEffort": True}), context,
              StreamOptions(thinking_level="xhigh"))
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}]},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "file body"},
        {"role": "user", "content": "thanks"},
    ]
    assert body["tools"] == [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                                               "parameters": {"type": "object"}}}]
    assert body["reasoning_effort"] == "high"


async def test_text_only_model_gets_no_images(server):
    server.script(Reply(body=openai_text("ok")))
    context = Context(messages=[UserMessage(content=[TextContent(text="see"), ImageContent(data="QQ==")])])
    await run(model(server, input=["text"]), context)
    content = server.requests[0].body["messages"][0]["content"]
    assert all(part["type"] == "text" for part in content) and "omitted" in content[1]["text"]


async def test_a_lone_surrogate_and_an_invalid_chunk_in_the_stream(server):
    # The fast JSON parser refuses a lone surrogate escape; the answer is still read as sent.
    body = (b'data: {"choices":[{"index":0,"delta":{"content":"half \\ud83d of a pair"}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    server.script(Reply(body=body))
    final = (await run(model(server)))[-1].message
    assert final.text() == "half \ud83d of a pair" and final.stop_reason == "stop"
    server.script(Reply(body=b'data: {"choices": [\n\n'))
    final = (await run(model(server)))[-1].error
    assert final.stop_reason == "error" and final.error_message.startswith("the provider sent invalid JSON in its stream")


async def test_a_cookie_the_server_sets_is_not_sent_back(server):
    """Model requests are stateless: a Set-Cookie (a load balancer's, say) is not kept."""
    server.script(Reply(body=openai_text("one"), headers={"set-cookie": "affinity=abc; Path=/"}),
                  Reply(body=openai_text("two")))
    m = model(server)
    assert (await run(m))[-1].message.text() == "one"
    assert (await run(m))[-1].message.text() == "two"
    assert [r.headers.get("cookie") for r in server.requests] == [None, None]
