"""A cancellation signal shared by one run: the provider request, tools and their children.

Cancelling is idempotent. Work that awaits something long races it against
:meth:`CancelToken.wait`; callbacks let non-async code (a child process) react at once.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

T = TypeVar("T")


class Cancelled(Exception):
    """Raised by :meth:`CancelToken.raise_if_cancelled`."""


class CancelToken:
    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._callbacks: list[Callable[[], object]] = []  # what a callback returns is ignored
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "aborted") -> None:
        if self._event.is_set():
            return
        self.reason = reason
        self._event.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], object]) -> Callable[[], None]:
        """Call ``callback`` on cancellation (now, if already cancelled); returns an unsubscribe."""
        if self._event.is_set():
            callback()
            return lambda: None
        self._callbacks.append(callback)

        def remove() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return remove

    async def wait(self) -> None:
        await self._event.wait()

    def raise_if_cancelled(self) -> None:
        if self._event.is_set():
            raise Cancelled(self.reason or "aborted")


async def race(awaitable: Awaitable[T], cancel: CancelToken) -> T:
    """Await ``awaitable`` unless ``cancel`` fires first; then cancel it and raise Cancelled."""
    task = asyncio.ensure_future(awaitable)
    if cancel.cancelled:
        task.cancel()
        raise Cancelled(cancel.reason or "aborted")
    remove = cancel.on_cancel(task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        if cancel.cancelled:
            raise Cancelled(cancel.reason or "aborted") from None
        raise
    finally:
        remove()
