"""Connection lifecycle: ``initialize``, ``shutdown``, ``exit``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as t
from ..errors import InvalidRequest
from ..initialize import initialize
from ..registry import method

if TYPE_CHECKING:
    from ..server import Daemon


@method("initialize", params=t.InitializeParams, result=t.InitializeResult, errors=(InvalidRequest,),
        summary="negotiate version and capabilities")
async def initialize_(daemon: Daemon, p: t.InitializeParams) -> t.InitializeResult:
    result = initialize(p, daemon.client, daemon.max_frame_bytes, daemon.workspace)
    daemon.tools_workspace.allow(daemon.client.allowed_roots)
    import asyncio  # here: the initialize answer does not wait for asyncio's import

    loop = asyncio.get_running_loop()
    # Two turns of the loop: pygls sends this reply first, then the daemon may ask.
    loop.call_soon(loop.call_soon, daemon.trust.maybe_ask)
    daemon.background.start_soon()
    return result


@method("shutdown", params=t.Empty, result=t.Empty, summary="abort runs, answer, then wait for exit")
async def shutdown(daemon: Daemon, p: t.Empty) -> t.Empty:
    await daemon.begin_shutdown()
    return t.Empty()


@method("exit", params=t.Empty, result=None, summary="stop the process")
async def exit_(daemon: Daemon, p: t.Empty) -> None:
    daemon.request_exit()
