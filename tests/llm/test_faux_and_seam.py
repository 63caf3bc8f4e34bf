"""The provider seam never raises; the faux provider streams its script in chunks."""

import asyncio

from pi_daemon.cancel import CancelToken
from pi_daemon.events import ErrorEvent
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.llm.model import Context, Model, StreamOptions
from pi_daemon.llm.stream import StreamBuilder, guarded, parse_tool_arguments, stream
from pi_daemon.messages import UserMessage


async def collect(events):
    return [e async for e in events]


def ctx(text="hi"):
    return Context(messages=[UserMessage(content=text)])


async def test_faux_streams_text_and_tool_calls_in_chunks():
    faux = FauxProvider([tool_reply(("read", {"path": "a/b.py", "limit": 20}), text="Reading")], chunk_size=3)
    events = await collect(stream(faux.model(), ctx(), StreamOptions(), CancelToken()))
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    deltas = [e.delta for e in events if e.type == "toolcall_delta"]
    assert len(deltas) > 3 and all(len(d) <= 3 for d in deltas)
    end = next(e for e in events if e.type == "toolcall_end")
    assert end.tool_call.arguments == {"path": "a/b.py", "limit": 20}
    assert events[-1].message.stop_reason == "toolUse"
    assert events[-1].message.usage.input > 0


async def test_faux_says_clearly_when_its_script_is_exhausted():
    faux = FauxProvider([text_reply("only one")], model_id="short")
    await collect(stream(faux.model(), ctx(), StreamOptions(), CancelToken()))
    events = await collect(stream(faux.model(), ctx(), StreamOptions(), CancelToken()))
    final = events[-1]
    assert isinstance(final, ErrorEvent) and final.error.stop_reason == "error"
    assert "script exhausted" in final.error.error_message and "1 replies were scripted" in final.error.error_message


async def test_raising_provider_becomes_error_message_with_partial_content():
    model = Model(id="m", provider="p", api="test-raise")

    async def raising(model, context, options, cancel):
        b = StreamBuilder(model)
        yield b.start()
        s = b.text_start()
        yield s
        yield b.text_delta(s.content_index, "so far")
        raise ConnectionError("connection reset by peer")

    events = await collect(guarded(raising(model, ctx(), StreamOptions(), CancelToken()), model, CancelToken()))
    final = events[-1]
    assert isinstance(final, ErrorEvent)
    assert final.error.error_message == "connection reset by peer"
    assert final.error.text() == "so far"


async def test_stream_ending_without_final_event_is_an_error_not_success():
    model = Model(id="m", provider="p", api="x")

    async def silent(model, context, options, cancel):
        yield StreamBuilder(model).start()

    events = await collect(guarded(silent(model, ctx(), StreamOptions(), CancelToken()), model, CancelToken()))
    assert isinstance(events[-1], ErrorEvent) and "without a final event" in events[-1].error.error_message


async def test_unknown_api_is_an_error_event():
    events = await collect(stream(Model(id="m", provider="p", api="nope"), ctx(), StreamOptions(), CancelToken()))
    assert len(events) == 1 and "no provider is registered for api 'nope'" in events[0].error.error_message


async def test_cancel_turns_into_aborted():
    faux = FauxProvider([text_reply("a" * 100)], chunk_size=1, delay=0.01)
    cancel = CancelToken()
    asyncio.get_running_loop().call_later(0.05, cancel.cancel)
    events = await collect(stream(faux.model(), ctx(), StreamOptions(), cancel))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert events[-1].error.stop_reason == "aborted" and 0 < len(events[-1].error.text()) < 100


def test_partial_tool_arguments_are_closed():
    assert parse_tool_arguments('{"path": "a.py", "edits": [{"old": "x') == {"path": "a.py", "edits": [{"old": "x"}]}
    assert parse_tool_arguments("") == {}
    assert parse_tool_arguments("[1, 2]") == {}
