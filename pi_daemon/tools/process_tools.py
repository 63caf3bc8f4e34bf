"""The agent's tools for its background processes: ``process_output`` and ``process_kill``.

They work on the processes of the session they belong to (:class:`.background.ProcessTable`);
``bash{background: true}`` starts them.
"""

from __future__ import annotations

from typing import Any

from ..cancel import CancelToken
from ..converter import to_wire
from ..messages import ToolResult
from .background import BackgroundProcess, ProcessTable
from .base import Tool, ToolUpdate
from .workspace_tool import failure


def status_line(process: BackgroundProcess) -> str:
    info = process.info()
    if info.status == "running":
        return f"[{process.id} is running (pid {info.pid})]"
    how = "was stopped" if info.status == "killed" else "exited"
    return f"[{process.id} {how}, exit code {info.exit_code}]"


def output_text(process: BackgroundProcess, since: int | None) -> str:
    """The output since ``since`` (default: where the model last read), and where the rest is."""
    text, next_offset, truncated = process.output(process.model_read if since is None else since)
    process.model_read = next_offset
    lines = [text or "(no new output)"]
    if truncated:
        where = f"; the full output is in {process.path}" if process.path else ""
        lines.insert(0, f"[earlier output left out{where}]")
    lines.append(f"{status_line(process)} [next output from byte {next_offset}]")
    return "\n".join(lines)


class _ProcessTool(Tool):
    def __init__(self, table: ProcessTable, session_id: str) -> None:
        self.table = table
        self.session_id = session_id

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult:
        """Find the session's process ``args["id"]`` (only its own) and act on it."""
        process = self.table.processes.get(str(args["id"]))
        if process is None or process.session_id != self.session_id:
            known = ", ".join(f"{p.id} ({p.command})" for p in self.table.processes.values()
                              if p.session_id == self.session_id) or "none"
            return failure(f"no background process {args['id']!r} in this session; its processes: {known}")
        return ToolResult.text(await self.act(process, args), details=to_wire(process.info()))

    async def act(self, process: BackgroundProcess, args: dict[str, Any]) -> str:
        raise NotImplementedError


class ProcessOutputTool(_ProcessTool):
    name = "process_output"
    read_only = True
    description = ("Read the output of a background process (started with bash and background: true) since "
                   "byte offset `since` (default: where you last read it), with whether it still runs or its "
                   "exit code. At most the last 50 KB; the full output is in the file named.")
    parameters = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "description": "the process id bash gave"},
            "since": {"type": "integer", "minimum": 0, "description": "byte offset to read from"},
        },
        "required": ["id"],
        "additionalProperties": False,
    }

    async def act(self, process: BackgroundProcess, args: dict[str, Any]) -> str:
        return output_text(process, args.get("since"))


class ProcessKillTool(_ProcessTool):
    name = "process_kill"
    description = ("Stop a background process: SIGTERM to its process group, SIGKILL to everything it "
                   "started 2 s later.")
    parameters = {
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1, "description": "the process id bash gave"}},
        "required": ["id"],
        "additionalProperties": False,
    }

    async def act(self, process: BackgroundProcess, args: dict[str, Any]) -> str:
        was_running = process.running
        await process.stop()
        return status_line(process) if was_running else f"{status_line(process)} (it had already ended)"


PROCESS_TOOL_CLASSES = (ProcessOutputTool, ProcessKillTool)
