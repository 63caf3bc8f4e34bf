"""The stdout writer on a real pipe: frames keep their order whoever writes them, and the
event loop never blocks on a client that stopped reading."""

import asyncio
import os
import threading

from pi_daemon.wire.transport import FrameWriter


async def test_frames_keep_their_order_and_a_full_pipe_never_blocks_the_loop():
    read_fd, write_fd = os.pipe()
    writer = FrameWriter(write_fd)
    writer.attach(asyncio.get_running_loop())
    rescued = threading.Event()
    chunks: list[bytes] = []

    def read_all() -> None:
        chunks.extend(iter(lambda: os.read(read_fd, 65536), b""))

    def rescue() -> None:  # a loop blocked in write() would wait for this reader forever
        rescued.set()
        read_all()

    timer = threading.Timer(20, rescue)
    timer.start()
    expected = []
    for n in range(3000):  # ~1 MB: far more than the pipe holds, while nobody reads it
        frame = b'{"n":%d,"pad":"%s"}\n' % (n, b"x" * (5000 if n % 100 == 7 else 300))
        expected.append(frame)
        writer.write(frame)
        if n % 10 == 0:
            await asyncio.sleep(0)  # a new pass of the loop: the next frames go out separately
    await asyncio.sleep(0)
    assert not rescued.is_set()
    timer.cancel()
    reader = threading.Thread(target=read_all)
    if not rescued.is_set():
        reader.start()
    writer.flush()
    os.close(write_fd)
    if reader.is_alive():
        reader.join(10)
    timer.join()
    os.close(read_fd)
    assert not rescued.is_set()
    assert b"".join(chunks) == b"".join(expected)


async def test_a_producer_waiting_for_room_goes_on_once_its_frames_are_written():
    read_fd, write_fd = os.pipe()
    writer = FrameWriter(write_fd, high_water=1024)  # one small frame is over the mark
    writer.attach(asyncio.get_running_loop())

    async def produce() -> None:
        writer.write(b"x" * 2000 + b"\n")
        assert writer.backlog > writer.high_water
        await writer.drain()

    await asyncio.wait_for(produce(), 10)  # nobody reads the pipe yet, but it has room
    writer.flush()
    os.close(write_fd)
    assert os.read(read_fd, 65536) == b"x" * 2000 + b"\n"
    os.close(read_fd)


def test_input_that_arrives_after_the_loop_closed_raises_nothing_in_the_reader_thread(monkeypatch):
    """SIGTERM, then stdin EOF: the reader thread may wake a loop that has just closed. That must
    not print a traceback on the way out (it did: 'RuntimeError: Event loop is closed')."""
    from helpers import wait_until
    from pi_daemon.wire.transport import FrameReader

    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda hook: failures.append(hook.exc_value))
    read_fd, write_fd = os.pipe()
    reader = FrameReader(read_fd, 1 << 20)
    loop = asyncio.new_event_loop()
    reader.attach(loop, lambda items: None)
    loop.close()
    reader.start()
    os.write(write_fd, b'{"jsonrpc":"2.0","method":"exit"}\n')
    os.close(write_fd)  # EOF: the thread ends once it has handed both over
    wait_until(lambda: not reader._thread.is_alive(), "the reader thread to end")
    assert failures == []
