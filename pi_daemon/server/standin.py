"""Until the hub (one host, many connections) lands: each connection served by its own native face.

The same surface as the hub the listener is written against (``serve_connection``, ``busy``,
``counts``, ``on_change``, ``close``), so the listener does not change when the hub replaces it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable

from ..rpc.server import NativeFace
from ..wire.transport import FrameReader, FrameWriter


class PerConnection:
    def __init__(self, **options: Any) -> None:
        self.options = options
        self.faces: set[NativeFace] = set()
        self.on_change: Callable[[], None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve_connection(self, reader: FrameReader, writer: FrameWriter) -> None:
        face = NativeFace(reader, writer, **self.options)
        task = asyncio.ensure_future(face.run())
        self._tasks.add(task)
        self.faces.add(face)
        await asyncio.sleep(0)  # the face set itself up and took the signals: they are the server's
        if self.take_signals is not None:
            self.take_signals()
        try:
            await task
        finally:
            self._tasks.discard(task)
            self.faces.discard(face)

    take_signals: Callable[[], None] | None = None

    def busy(self) -> bool:
        return False

    def counts(self) -> tuple[int, int]:
        return sum(len(face.host.sessions.sessions) for face in self.faces), len(self.faces)

    async def close(self, abort: bool = True) -> None:
        for face in list(self.faces):
            face.request_exit()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
