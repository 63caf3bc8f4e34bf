"""The agent's background processes, for clients: ``process/list``, ``process/output``, ``process/kill``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import types as t
from ...tools.background import BackgroundProcess
from ...wire.errors import InvalidParams, SessionNotFoundError
from ..registry import method

if TYPE_CHECKING:
    from ..context import Context


def _find(ctx: "Context", id: str) -> BackgroundProcess:
    try:
        return ctx.sessions.processes.get(id)
    except KeyError as exc:
        raise InvalidParams(f"id: {exc.args[0]}") from None


@method("process/list", params=t.ProcessListParams, result=t.ProcessListResult, errors=(SessionNotFoundError,),
        summary="the background processes of a session (or of all), running and recently ended")
async def process_list(ctx: "Context", p: t.ProcessListParams) -> t.ProcessListResult:
    if p.session_id:
        ctx.session(p.session_id)
    return t.ProcessListResult(processes=ctx.sessions.processes.list(p.session_id))


@method("process/output", params=t.ProcessOutputParams, result=t.ProcessOutputResult, errors=(InvalidParams,),
        summary="a background process's output since a byte offset")
async def process_output(ctx: "Context", p: t.ProcessOutputParams) -> t.ProcessOutputResult:
    process = _find(ctx, p.id)
    text, next_offset, truncated = process.output(p.since)
    info = process.info()
    return t.ProcessOutputResult(text=text, next=next_offset, status=info.status, truncated=truncated,
                                 exit_code=info.exit_code)


@method("process/kill", params=t.ProcessKillParams, result=t.ProcessInfo, errors=(InvalidParams,),
        summary="stop a background process (SIGTERM, SIGKILL 2 s later); answers once it ended")
async def process_kill(ctx: "Context", p: t.ProcessKillParams) -> t.ProcessInfo:
    return await ctx.sessions.processes.kill(_find(ctx, p.id).id)
