"""stdio transport: the protocol's own file descriptors, a reader and a writer thread.

At start-up the real stdout is taken for the protocol and fd 1 is pointed at stderr
(so a stray ``print`` or a child process can never corrupt the stream); fd 0 is
replaced by /dev/null for the same reason on the input side.

One dedicated reader thread reads stdin and decodes frames, from the start; they are
handed to the event loop once it is attached (frames read before that wait for it). The writer thread writes queued frames in batches; its
buffer is bounded, and :meth:`FrameWriter.drain` makes producers wait while it is full.
Frames written on the loop's thread are gathered over one pass of the loop, then written
by the loop itself when that cannot block (stdout is a pipe or a file that has room for them,
nothing is queued, at most ``PIPE_BUF`` bytes), else handed to the writer thread in one go:
waking the thread, and the switches of the GIL that follow, cost far more than writing a
small frame (a tool turn sends a dozen events, a streamed answer one per delta).

Replies are bounded the same way from the input side: the reader stops reading stdin
while the writer is over its high-water mark (until it is back under the low one) and
while too many frames wait for the loop, so a client that sends without reading meets
a full pipe instead of growing the daemon's memory.
While idle it also watches stdout, so a client that went away is noticed even when
nothing is being written (a quiet tool, a slow model).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import select
import stat
import sys
import threading
from collections import deque
from typing import Callable

from .framing import FrameDecoder, FrameError

log = logging.getLogger(__name__)

EOF = object()
WATCH_INTERVAL_S = 0.5  # how often an idle writer checks that the client still reads
MAX_UNDELIVERED = 1024  # frames read but not yet taken by the loop before reading pauses


def take_over_stdio() -> tuple[int, int]:
    """Returns ``(in_fd, out_fd)`` for the protocol; fd 0/1 become /dev/null / stderr."""
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return in_fd, out_fd


class FrameReader:
    def __init__(self, fd: int, max_frame_bytes: int, writer: "FrameWriter | None" = None) -> None:
        self.fd = fd
        self.writer = writer
        self.decoder = FrameDecoder(max_frame_bytes)
        self._undelivered = 0
        self._room = threading.Condition()
        self._items: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_items: Callable[[list[object]], None] | None = None
        self._wake_pending = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="pi-daemon-reader", daemon=True)

    @property
    def framing(self) -> str | None:
        return self.decoder.framing

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wait_for_room()
            try:
                data = os.read(self.fd, 1 << 16)
            except OSError as exc:
                log.warning("reading stdin failed: %s", exc)
                data = b""
            items = [EOF] if not data else self.decoder.feed(data)
            if items:
                with self._room:
                    self._undelivered += len(items)
                for item in items:
                    self._items.put(item)
                self._wake()
            if not data:
                return

    def _wait_for_room(self) -> None:
        if self.writer is not None:
            self.writer.wait_for_room()
        with self._room:
            while self._undelivered > MAX_UNDELIVERED:
                self._room.wait()

    def _taken(self, count: int) -> None:
        with self._room:
            self._undelivered -= count
            self._room.notify()

    def _wake(self) -> None:
        with self._lock:
            if self._loop is None or self._wake_pending:
                return
            self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._deliver)
        except RuntimeError:  # the loop has closed: the daemon is stopping, nobody serves these
            pass

    def _deliver(self) -> None:
        with self._lock:
            self._wake_pending = False
        items = []
        while True:
            try:
                items.append(self._items.get_nowait())
            except queue.Empty:
                break
        if not items:
            return
        try:
            if self._on_items is not None:
                self._on_items(items)
        finally:
            self._taken(len(items))

    def join(self, timeout: float | None = None) -> None:
        """Wait until the reader has read its EOF and stopped (a socket's: shut it down first), so
        its descriptor may be closed without the number being read again once reused."""
        self._thread.join(timeout)

    def attach(self, loop: asyncio.AbstractEventLoop, on_items: Callable[[list[object]], None]) -> None:
        with self._lock:
            self._loop = loop
            self._on_items = on_items
        loop.call_soon(self._deliver)


class FrameWriter:
    """Writes frames to ``fd`` from a thread; the buffer holds at most ``high_water`` bytes."""

    def __init__(self, fd: int, high_water: int = 1 << 20) -> None:
        self.fd = fd
        self.high_water = high_water
        self.low_water = high_water // 4
        self.broken = False
        self.frames = 0  # written so far (a measure of activity)
        self.on_broken: Callable[[], None] | None = None
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        lock = threading.RLock()
        self._cond = threading.Condition(lock)  # the writer thread waits here for chunks
        self._room = threading.Condition(lock)  # the reader thread waits here for room
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._space: asyncio.Event | None = None
        # Frames the loop's thread wrote in this pass of the loop (touched by that thread only).
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._writing = False  # the writer thread holds a batch it is writing
        self._direct: select.poll | None = None  # set when the loop may write itself
        self._thread = threading.Thread(target=self._run, name="pi-daemon-writer", daemon=True)
        self._thread.start()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._space = asyncio.Event()
        self._space.set()
        try:
            mode = os.fstat(self.fd).st_mode
        except OSError:
            return
        # A pipe with room for PIPE_BUF bytes takes them at once; a file always does. A
        # terminal or a socket may block on a small write: the thread writes to those.
        if stat.S_ISFIFO(mode) or stat.S_ISREG(mode):
            self._direct = select.poll()
            self._direct.register(self.fd, select.POLLOUT)

    def write(self, data: bytes) -> None:
        if self.broken:
            return
        self.frames += 1
        loop = self._loop
        if loop is not None and threading.get_ident() == self._loop_thread and not loop.is_closed():
            if not self._pending:
                loop.call_soon(self._hand_over)
            self._pending.append(data)
            self._pending_bytes += len(data)
        else:
            self._queue([data], len(data))
        if self._space is not None and self.backlog > self.high_water:
            self._space.clear()

    def _hand_over(self) -> None:
        """The frames of this pass of the loop: written now when that cannot block, else
        to the writer thread in one go."""
        if self._pending:
            frames, size = self._pending, self._pending_bytes
            self._pending, self._pending_bytes = [], 0
            self._queue(frames, size, direct=True)

    def _write_now(self, data: bytes) -> int:
        """Bytes of ``data`` written without blocking (0: leave it to the writer thread,
        which also meets and reports any error)."""
        assert self._direct is not None
        try:
            ready = self._direct.poll(0)
            if not ready or ready[0][1] != select.POLLOUT:
                return 0
            return os.write(self.fd, data)
        except OSError:
            return 0

    def _queue(self, frames: list[bytes], size: int, direct: bool = False) -> None:
        with self._cond:
            if self.broken:
                return
            # Under the lock and with nothing queued or being written: the order holds.
            if direct and self._direct is not None and size <= select.PIPE_BUF \
                    and not self._chunks and not self._writing:
                data = frames[0] if len(frames) == 1 else b"".join(frames)
                written = self._write_now(data)
                if written == size:
                    if self._space is not None and self.backlog <= self.low_water:
                        self._space.set()  # a producer waiting in drain() for these frames goes on
                    return
                frames, size = [data[written:]], size - written
            idle = not self._chunks  # the writer thread waits only on an empty queue
            self._chunks.extend(frames)
            self._buffered += size
            if idle:
                self._cond.notify()

    @property
    def backlog(self) -> int:
        """Bytes queued but not yet written."""
        return self._buffered + self._pending_bytes

    def wait_for_room(self) -> None:
        """Blocking, for the reader thread: over the high-water mark, wait for the low one."""
        with self._cond:
            if self._buffered <= self.high_water:
                return
            while self._buffered > self.low_water and not self.broken and not self._closing:
                self._room.wait()

    async def drain(self) -> None:
        """Wait while the buffer is over the high-water mark (the client is not reading)."""
        if self._space is not None and self.backlog > self.high_water and not self.broken:
            await self._space.wait()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._chunks and not self._closing:
                    if not self._cond.wait(WATCH_INTERVAL_S) and self._reader_gone():
                        self._cond.release()
                        try:
                            self._fail(BrokenPipeError("nobody reads stdout any more"))
                        finally:
                            self._cond.acquire()
                        return
                if not self._chunks:
                    return
                batch = b"".join(self._chunks)
                self._chunks.clear()
                self._writing = True
            try:
                view = memoryview(batch)
                while view:
                    written = os.write(self.fd, view[: 1 << 20])
                    view = view[written:]
            except OSError as exc:
                self._fail(exc)
                return
            with self._cond:
                self._writing = False
                self._buffered -= len(batch)
                low = self._buffered <= self.low_water
                self._room.notify_all()
            if low and self._space is not None:
                self._call_in_loop(self._space.set)

    def _reader_gone(self) -> bool:
        """While idle: has the other end of a stdout pipe been closed?"""
        try:
            poller = select.poll()
            poller.register(self.fd, select.POLLERR | select.POLLHUP)
            return bool(poller.poll(0))
        except (OSError, ValueError):
            return False

    def _fail(self, exc: OSError) -> None:
        log.warning("writing stdout failed (%s); the client is gone", exc)
        with self._cond:
            self.broken = True
            self._chunks.clear()
            self._buffered = 0
            self._cond.notify_all()
            self._room.notify_all()
        if self._space is not None:
            self._call_in_loop(self._space.set)
        if self.on_broken is not None:
            self._call_in_loop(self.on_broken)

    def _call_in_loop(self, fn: Callable[[], None]) -> None:
        loop = self._loop
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(fn)
        except RuntimeError:  # the loop has closed: nobody is waiting any more
            pass

    def flush(self, timeout: float = 5.0) -> None:
        """Block until everything queued is written (or the pipe broke), then stop."""
        self._loop = None
        self._hand_over()
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            self._room.notify_all()
        self._thread.join(timeout)


__all__ = ["EOF", "FrameError", "FrameReader", "FrameWriter", "take_over_stdio"]
