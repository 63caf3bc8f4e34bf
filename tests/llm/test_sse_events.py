"""Server-sent events read through ``sse_stream`` mean exactly what ``httpx_sse`` reads in them,
whatever the line ends and wherever the network cuts the text."""

import httpx
import pytest
from httpx_sse import EventSource

from loopback import Reply
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.http import sse_stream
from pi_daemon.llm.model import Model

# Every field the format has, a comment, a data field split over lines, an id kept across
# events, a bad retry, a field with no colon, non-ASCII text, and the three kinds of line end.
STREAM = ("event: first\ndata: {\"a\": 1}\nid: 7\nretry: 1500\n\n"
          ": keep-alive\r\ndata: one\r\ndata:two\r\n\r\n"
          "data: ümlaut ✓ 🙂\rretry: soon\rdata\r\r"
          "event: only-a-name\n\n"
          "id: 8\0bad\ndata: after a bad id\n\n"
          "data: no blank line at the end")


def model(url: str) -> Model:
    return Model(id="m", provider="p", api="openai-completions", base_url=url)


async def reference(url: str) -> list[tuple]:
    async with httpx.AsyncClient() as client, client.stream("POST", url, json={}) as response:
        return [(e.event, e.data, e.id, e.retry) async for e in EventSource(response).aiter_sse()]


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 64, 4096])
async def test_events_match_httpx_sse_wherever_the_text_is_cut(server, piece):
    body = STREAM.encode()
    server.script(Reply(body=body, piece=piece), Reply(body=body, piece=piece))
    url = server.url + "/v1/chat/completions"
    ours = [(e.event, e.data, e.id, e.retry) async for e in sse_stream(model(server.url), url, {}, {}, CancelToken())]
    assert ours == await reference(url)
    assert [data for _, data, _, _ in ours] == ['{"a": 1}', "one\ntwo", "ümlaut ✓ 🙂\n", "", "after a bad id"]
    assert [e[2] for e in ours] == ["7", "7", "7", "7", "7"]


async def test_an_answer_that_is_not_an_event_stream_is_refused(server):
    server.script(Reply(body=b"data: x\n\n", content_type="application/json"))
    with pytest.raises(Exception, match="Content-Type to contain 'text/event-stream'"):
        async for _ in sse_stream(model(server.url), server.url + "/v1/chat/completions", {}, {}, CancelToken()):
            pass


@pytest.mark.parametrize("piece", [1, 4096])
async def test_a_byte_order_mark_opening_the_stream_is_not_part_of_the_first_field(server, piece):
    body = "\ufeffdata: first\n\ndata: \ufeffsecond\n\n".encode()  # only the stream's first one is dropped
    server.script(Reply(body=body, piece=piece))
    events = [e.data async for e in sse_stream(model(server.url), server.url + "/v1/chat/completions", {}, {},
                                               CancelToken())]
    assert events == ["first", "\ufeffsecond"]
