"""LSP's vocabulary for the editor requests that speak it: lsprotocol's types and one converter
of theirs, both loaded on their first use — an editor's first language answer or first edit —
and never before: ``lsprotocol.types`` is a large import (about 0.3 s of CPU), and made at
``initialize`` it would share the one interpreter lock with the first prompt.

The first load runs in a thread (:func:`loaded`): meanwhile the event loop goes on serving the
client and the other sessions.

lsprotocol's ``get_converter()`` builds a new converter, with its hooks, on every call; the
daemon keeps the first, so an edit or a language request does not pay for that again. It is
made once even when two requests or edits of one message arrive together: two threads building
lsprotocol's converters at once can fail ("dictionary changed size during iteration").
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

_made: Any = None
_making = threading.Lock()  # threads, not tasks: the first load runs in one, a later caller may be in another


def types() -> Any:
    """``lsprotocol.types``."""
    from lsprotocol import types as lsp_types

    return lsp_types


def converter() -> Any:
    """lsprotocol's converter (LSP's field names and unions), made once."""
    global _made
    if _made is None:
        with _making:
            if _made is None:
                from lsprotocol.converters import get_converter

                _made = get_converter()
    return _made


async def loaded() -> None:
    """Both loaded: the first time in a thread, at once afterwards."""
    if _made is None:
        await asyncio.to_thread(converter)
