"""JSON read exactly as the ``json`` module reads it, at orjson's speed where the two agree.

orjson reads an integer of 20 or more digits as a float (silently losing digits) and
refuses a lone surrogate escape and ``NaN``; for those the ``json`` module reads the text,
so a frame or a provider's event means what it says whatever parser read it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_NUMBER = b"0" * 20  # 20 digits in a row: may not fit 64 bits


def long_number(text: str | bytes) -> bool:
    """``text`` has 20 digits in a row, which orjson may not read exactly (else it reads any
    JSON in ``text`` exactly, or refuses it)."""
    # Text is scanned as UTF-8 bytes: str.translate maps character by character in Python's
    # slow path, and cost as much as parsing a provider's small stream event.
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    return _LONG_NUMBER in raw.translate(_DIGITS_AS_ZERO)


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text``; raises ``ValueError`` (``json.JSONDecodeError``) when it is not JSON,
    or is nested too deeply to read (the ``json`` module would overflow the stack)."""
    if not long_number(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to read") from None
