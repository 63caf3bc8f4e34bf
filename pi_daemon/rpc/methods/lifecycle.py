"""Connection lifecycle: ``initialize``, ``shutdown``, ``exit``."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from .. import types as t
from ...wire.errors import InvalidRequest
from ..initialize import initialize
from ..initialize_types import ServerMode
from ..registry import method

if TYPE_CHECKING:
    from ..context import Context


@method("initialize", params=t.InitializeParams, result=t.InitializeResult, errors=(InvalidRequest,),
        summary="negotiate version and capabilities")
async def initialize_(ctx: "Context", p: t.InitializeParams) -> t.InitializeResult:
    result = initialize(p, ctx.client, ctx.max_frame_bytes, ctx.workspace,
                        ServerMode(shared=ctx.hub.shared, pid=os.getpid()))
    ctx.after_initialize()
    return result


@method("shutdown", params=t.Empty, result=t.Empty,
        summary="abort runs, answer, then wait for exit (under a server: end this connection only)")
async def shutdown(ctx: "Context", p: t.Empty) -> t.Empty:
    await ctx.begin_shutdown()
    return t.Empty()


@method("exit", params=t.Empty, result=None, summary="stop the process")
async def exit_(ctx: "Context", p: t.Empty) -> None:
    ctx.request_exit()
