"""Coalescing of deltas while the client lags, with a real writer on a real pipe."""

import asyncio
import json
import os
import threading

from helpers import await_until

from pi_daemon.events import MessageUpdate, TextDeltaEvent, ThinkingDeltaEvent, TurnStart
from pi_daemon.messages import Usage
from pi_daemon.wire.framing import encode
from pi_daemon.rpc.notify import COALESCE_ABOVE, SessionStream
from pi_daemon.wire.transport import FrameWriter


def text(i: int, delta: str) -> MessageUpdate:
    return MessageUpdate(assistant_message_event=TextDeltaEvent(i, delta))


async def test_deltas_merge_only_while_backlogged_and_never_across_blocks():
    read_fd, write_fd = os.pipe()
    writer = FrameWriter(write_fd)
    writer.attach(asyncio.get_running_loop())
    class Client:  # a connection, as a session's stream sees it
        def __init__(self):
            self.writer = writer

        def send_frame(self, body):
            writer.write(encode(body, "ndjson"))

    sender = SessionStream("s1", lambda: [Client()])
    await sender(text(0, "a"))  # no backlog yet: sent as is
    writer.write(b" " * (COALESCE_ABOVE + 70_000) + b"\n")  # the client stops reading: a backlog
    await await_until(lambda: writer.backlog > COALESCE_ABOVE, "the writer's backlog")
    for delta in "bcd":
        await sender(text(0, delta))
    await sender(MessageUpdate(assistant_message_event=TextDeltaEvent(1, "X")))  # another block
    await sender(MessageUpdate(assistant_message_event=TextDeltaEvent(1, "Y"), usage=Usage(output=7)))
    await sender(MessageUpdate(assistant_message_event=ThinkingDeltaEvent(1, "t")))
    await asyncio.sleep(0.05)  # the held delta goes out after HOLD_S
    await sender(TurnStart())

    chunks = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_fd, 65536), b"")))
    reader.start()
    writer.flush()
    os.close(write_fd)
    reader.join(5)
    lines = [json.loads(line) for line in b"".join(chunks).split(b"\n") if line.strip()]
    events = [m["params"] for m in lines if m.get("method") == "agent/event"]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    updates = [(e["event"]["assistantMessageEvent"]["type"], e["event"]["assistantMessageEvent"]["contentIndex"],
                e["event"]["assistantMessageEvent"]["delta"]) for e in events if e["event"]["type"] == "message_update"]
    assert updates == [("text_delta", 0, "a"), ("text_delta", 0, "bcd"), ("text_delta", 1, "XY"),
                       ("thinking_delta", 1, "t")]
    merged = next(e["event"] for e in events if e["event"].get("assistantMessageEvent", {}).get("delta") == "XY")
    assert merged["usage"]["output"] == 7  # the latest usage survives the merge
    assert events[-1]["event"] == {"type": "turn_start"}
    os.close(read_fd)
