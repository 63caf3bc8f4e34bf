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


async def test_the_sessions_of_a_daemon_keep_a_bounded_total_the_largest_giving_up_its_oldest_first():
    from pi_daemon.rpc.notify import KeptBudget

    budget = KeptBudget(limit=20_000)
    quiet = SessionStream("quiet", lambda: [], budget=budget)
    busy = SessionStream("busy", lambda: [], budget=budget)
    for i in range(5):
        await quiet(text(0, "q" * 100))
    for i in range(400):
        await busy(text(0, "b" * 100))
        assert budget.total <= budget.limit
    assert budget.total == quiet.kept_bytes + busy.kept_bytes
    assert quiet.since(1) is not None and len(quiet.since(1)) == 5  # the small one kept all it had
    assert busy.since(1) is None  # the large one let its oldest go: a client that far behind gets a replay
    assert busy.since(busy.seq) is not None and len(busy.since(busy.seq)) == 1
    busy.forget()
    assert budget.total == quiet.kept_bytes and busy not in budget.streams


def test_the_events_kept_for_catching_up_cost_the_memory_of_their_bytes_through_the_real_daemon(tmp_path):
    # 20,000 deltas, each sent on its own to a client that reads them at once: every one is kept for a
    # later session/load{fromSeq}. Their frames are some 5 MB; kept as orjson returned them (each with
    # a spare buffer of KiBs) they took some 80 MB.
    from test_lifecycle import rss_kb, streaming

    # Paced (0.2 ms apart, some 5 s in all) so that a client starved by a loaded host still keeps up:
    # a client that lags gets adjacent deltas merged, and few frames are kept.
    with streaming(tmp_path, 20_000, delay_ms=0.2) as (proc, baseline):
        received = bytearray()
        while b'"agent_settled"' not in received[-4096:]:
            data = os.read(proc.stdout.fileno(), 1 << 20)  # raw reads: the client never lags
            assert data, "the daemon ended before the run settled"
            received += data
        lines = [json.loads(line) for line in bytes(received).split(b"\n") if line.strip()]
        deltas = [m for m in lines if m.get("method") == "agent/event"
                  and m["params"]["event"].get("assistantMessageEvent", {}).get("type") == "text_delta"]
        # Sent one by one, unless the host was too loaded for the client to keep up (then merged: fewer).
        assert len(deltas) > 2_000
        grown = rss_kb(proc.pid) - baseline
        assert grown < 10_000 + 1.5 * len(deltas), f"{grown} KB more after {len(deltas)} deltas"
