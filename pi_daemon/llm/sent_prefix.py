"""The part of a request's history that was already sent, kept as one piece of JSON.

A tool loop sends the whole history again on every turn, and it only grows: the messages
up to the last one that is not a tool result are the same objects, in the same order, on
the next turn. Their JSON is kept joined, so a turn checks that prefix by identity (at C
speed) and encodes only what is new, instead of walking the whole history in Python.

The prefix ends after a message that is not a tool result because the conversion of tool
results depends on what follows them (images move after a run of results); everything up
to such a message converts the same whatever comes later.

A prefix holds its messages weakly: when one of them is gone (the session was closed,
compacted), the prefix is dropped, so an identity can never be mistaken for a new object's.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

from ..messages import ToolResultMessage

# encode(messages) -> the comma-joined JSON of their wire forms (b"" when none is sent)
Encode = Callable[[Sequence[Any]], bytes]


class SentPrefix:
    __slots__ = ("shape", "ids", "refs", "joined", "valid", "__weakref__")

    def __init__(self, shape: tuple[Any, ...]) -> None:
        self.shape = shape
        self.ids: list[int] = []
        self.refs: list[weakref.ref[Any]] = []
        # Grown in place: a long session's history is hundreds of kilobytes, and a new
        # bytes object every turn would copy it all again.
        self.joined = bytearray()
        self.valid = True

    def _drop(self, _ref: Any) -> None:
        self.valid = False
        self.ids, self.refs, self.joined = [], [], bytearray()

    def matches(self, messages: Sequence[Any], shape: tuple[Any, ...]) -> bool:
        n = len(self.ids)
        return self.valid and shape == self.shape and len(messages) >= n and \
            list(map(id, messages[:n])) == self.ids

    def extend(self, messages: Sequence[Any], encoded: bytes) -> bool:
        """Add ``messages`` (whose JSON is ``encoded``); False when one cannot be held weakly."""
        drop = weakref.WeakMethod(self._drop)

        def gone(ref: Any) -> None:
            method = drop()
            if method is not None:
                method(ref)

        try:
            refs = [weakref.ref(m, gone) for m in messages]
        except TypeError:
            return False
        self.ids += map(id, messages)
        self.refs += refs
        if encoded:
            if self.joined:
                self.joined += b","
            self.joined += encoded
        return True


_prefix: SentPrefix | None = None  # the last request's (one conversation at a time is the common case)


def encode_history(messages: Sequence[Any], shape: tuple[Any, ...], encode: Encode) -> list[bytes | bytearray]:
    """The JSON of ``messages``' wire forms, reusing the last request's prefix: non-empty
    parts to be joined with commas (joined once, into the request, by the caller)."""
    global _prefix
    prefix = _prefix
    if prefix is None or not prefix.matches(messages, shape):
        prefix = _prefix = SentPrefix(shape)
    start = len(prefix.ids)
    stable = len(messages)
    while stable > start and isinstance(messages[stable - 1], ToolResultMessage):
        stable -= 1
    parts: list[bytes | bytearray] = [prefix.joined]
    if stable > start:
        middle = encode(messages[start:stable])
        if not prefix.extend(messages[start:stable], middle):
            _prefix = None
            parts.append(middle)
    parts.append(encode(messages[stable:]))
    return [p for p in parts if p]
