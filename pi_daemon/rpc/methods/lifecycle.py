"""Connection lifecycle: ``initialize``, ``shutdown``, ``exit``.

Imports nothing but the initialize path: ``initialize`` is answered with this module loaded
alone (see :mod:`pi_daemon.rpc.methods`)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...wire.errors import InvalidRequest
from ..initialize import initialize
from ..initialize_types import Empty, InitializeParams, InitializeResult, ServerMode
from ..registry import method

if TYPE_CHECKING:
    from ..context import Context


@method("initialize", params=InitializeParams, result=InitializeResult, errors=(InvalidRequest,),
        summary="negotiate version and capabilities")
async def initialize_(ctx: "Context", p: InitializeParams) -> InitializeResult:
    result = initialize(p, ctx.client, ctx.max_frame_bytes, ctx.workspace,
                        ServerMode(shared=ctx.hub.shared, pid=os.getpid()))
    ctx.after_initialize()
    return result


@method("shutdown", params=Empty, result=Empty,
        summary="abort runs, answer, then wait for exit (under a server: end this connection only)")
async def shutdown(ctx: "Context", p: Empty) -> Empty:
    await ctx.begin_shutdown()
    return Empty()


@method("exit", params=Empty, result=None, summary="stop the process")
async def exit_(ctx: "Context", p: Empty) -> None:
    ctx.request_exit()
