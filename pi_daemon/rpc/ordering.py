"""Which of one connection's requests wait for which: a script's pipeline works as written.

Requests are served as they arrive, each as its own task, so an editor can abort a run or
read the state while a prompt is being answered. A script writes its requests in order and
means that order — ``prompt``, ``waitForIdle``, ``prompt``, ``waitForIdle``, ``session/close`` —
so around ``waitForIdle`` the connection's requests about a session keep their order:

* a ``waitForIdle`` first waits for the requests before it about the same session (the
  ``prompt`` before it has started its run, or been refused, when it looks);
* a request about that session sent after a ``waitForIdle`` waits until that ``waitForIdle``
  has been answered.

"About a session" is a method whose params have a ``sessionId`` field, and ``session/new``
(it changes which session is current); the same session is the same ``sessionId``, and a
request without one (the current session) is taken to be about every session. ``abort`` and
``abortBash`` never wait: they are how a client stops what it waits for. Everything else
overtakes as before. protocol.md ("Order of requests") says the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

import attrs

WAIT_FOR_IDLE = "waitForIdle"
OVERTAKING = frozenset({"abort", "abortBash"})
CHANGES_CURRENT = frozenset({"session/new"})


def is_ordered(method: str, params: type) -> bool:
    """Whether requests of ``method`` (params of class ``params``) keep their order around a waitForIdle."""
    if method in OVERTAKING:
        return False
    return method in CHANGES_CURRENT or attrs.has(params) and "session_id" in attrs.fields_dict(params)


def _same(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


class SessionOrder:
    """One connection's requests about sessions that are still being served."""

    def __init__(self) -> None:
        self._in_flight: list[tuple[str | None, bool, asyncio.Task[Any]]] = []  # (session, is waitForIdle, task)

    def enter(self, method: str, params: Any) -> set[asyncio.Task[Any]]:
        """Called by an ordered request's own task before its first await: the requests it waits for."""
        raw = params.get("sessionId") if isinstance(params, dict) else None
        session = raw if isinstance(raw, str) else None
        barrier = method == WAIT_FOR_IDLE
        waits = {task for other, other_barrier, task in self._in_flight
                 if (barrier or other_barrier) and _same(session, other) and not task.done()}
        task = asyncio.current_task()
        assert task is not None
        entry = (session, barrier, task)
        self._in_flight.append(entry)
        task.add_done_callback(lambda _: self._in_flight.remove(entry))
        return waits
