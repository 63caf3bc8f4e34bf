"""LSP's vocabulary for the editor requests that speak it: lsprotocol's types and one converter
of theirs, both loaded on their first use — an editor's first language answer or first edit —
and never before: ``lsprotocol.types`` is a large import (about 0.3 s of CPU), and made at
``initialize`` it would share the one interpreter lock with the first prompt.

The first load runs in a thread (:func:`loaded`): meanwhile the event loop goes on serving the
client and the other sessions.

lsprotocol's ``get_converter()`` builds a new converter, with its hooks, on every call; the
daemon keeps the first, so an edit or a language request does not pay for that again.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

_loaded = False


def types() -> Any:
    """``lsprotocol.types``."""
    from lsprotocol import types as lsp_types

    return lsp_types


@functools.cache
def converter() -> Any:
    """lsprotocol's converter (LSP's field names and unions), made once."""
    from lsprotocol.converters import get_converter

    return get_converter()


async def loaded() -> None:
    """Both loaded: the first time in a thread, at once afterwards."""
    global _loaded
    if not _loaded:
        await asyncio.to_thread(converter)
        _loaded = True
