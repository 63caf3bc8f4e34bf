"""The agent's ``bash`` tool: a command in the workspace, sandboxed when the sandbox is available.

Updates carry the last ``UPDATE_CHARS`` characters of output at most every
``UPDATE_EVERY_S`` (output that comes sooner is shown that long after the last update, so
the last lines before a pause are never held back); only that window is kept for them, so
a command printing hundreds of megabytes costs linear time and bounded memory (the full
output goes to a file, see :mod:`.shell`). The sandbox (:mod:`pi_daemon.guard.sandbox`) is read from settings at each call.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..cancel import CancelToken
from ..messages import ToolResult
from ..guard import sandbox
from .base import ToolUpdate
from .background import ProcessTable, TooManyProcesses
from .process_tools import output_text
from .shell import run_shell
from .workspace_tool import WorkspaceTool, failure

UPDATE_EVERY_S = 0.1
UPDATE_CHARS = 4000


class BashTool(WorkspaceTool):
    name = "bash"
    processes: ProcessTable | None = None  # where background commands go (set with the session's tools)
    session_id = ""
    description = (
        "Run a shell command (bash -c) in the workspace. stdin is closed; stdout and stderr are "
        "combined. Output is cut to the last 2000 lines / 50 KB, the full output then saved to a "
        "file whose path is given. A non-zero exit code is reported as an error. Default timeout "
        "300 s. The command is over when its shell exits: what it left running is killed then, so "
        "do not start servers or daemons with '&'; run them with background: true instead, which "
        "returns at once with a process id and the first output (read more with process_output, "
        "stop it with process_kill; it also ends with the session)."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "the command line"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds before it is killed"},
            "background": {"type": "boolean", "description": "keep it running after this call returns"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        window = ""
        last = 0.0
        trailing: asyncio.Task[None] | None = None  # shows output that came within UPDATE_EVERY_S of the last update

        async def update() -> None:
            nonlocal last
            last = time.monotonic()
            await on_update(ToolResult.text(window, details=shown_details))

        async def update_later(delay: float) -> None:
            nonlocal trailing
            await asyncio.sleep(delay)
            trailing = None
            await update()

        async def output(delta: str) -> None:
            nonlocal window, trailing
            window = (window + delta)[-UPDATE_CHARS:]
            since = time.monotonic() - last
            if since >= UPDATE_EVERY_S:
                await update()
            elif trailing is None:
                trailing = asyncio.ensure_future(update_later(UPDATE_EVERY_S - since))

        saved, not_saved = await self.files.save_edits()  # the agent's edits, so the command reads them
        notes = []
        if saved:
            notes.append(f"[saved before running: {', '.join(saved)}]")
        if not_saved:
            notes.append(f"[could not save before running: {', '.join(not_saved)}]")
        shown_details = {"savedFiles": saved} if saved else None
        unsaved = self.files.unsaved()  # as the command starts: it reads these as last saved
        box = sandbox.configured(self.workspace.root)
        if self.files.changes is not None:  # allowed, about to run: what it changes is found from here
            # confined: it can write only the watched workspace (no other root, .git read-only)
            confined = box is not None and not box.writable and not box.git_writable and len(self.workspace.roots) == 1
            left_out = await self.files.changes.before_bash(confined)
            if left_out is not None:
                notes.append(left_out)
        if args.get("background"):
            return await self._start_background(args["command"], box, notes, shown_details)
        try:
            result = await run_shell(args["command"], str(self.workspace.cwd), cancel=cancel,
                                     timeout=args.get("timeout", 300), on_output=output,
                                     spill_dir=self.workspace.root / ".pi" / "tmp",
                                     sandbox=box, writable=self.workspace.roots)
        except asyncio.CancelledError:
            if trailing is not None:
                trailing.cancel()
            await update()  # stopped: the output so far is its result
            raise
        if trailing is not None:
            trailing.cancel()
        text = "\n".join([*notes, result.output or "(no output)"])
        if result.truncated and result.full_output_path:
            text = f"[output cut to its last lines; the full output is in {result.full_output_path}]\n{text}"
        if unsaved:
            text += ("\n[unsaved in the editor, so this command read them as last saved on the disk: "
                     f"{', '.join(unsaved)}]")
        details: dict[str, Any] = {"exitCode": result.exit_code, "truncated": result.truncated,
                                   "fullOutputPath": result.full_output_path, "sandboxed": box is not None}
        if saved:
            details["savedFiles"] = saved
        if result.timed_out:
            return failure(f"{text}\n[timed out after {args.get('timeout', 300)} s: the process group was killed]", details)
        if result.cancelled:
            return failure(f"{text}\n[aborted: the process group was killed]", details)
        if result.exit_code != 0:
            return failure(f"{text}\n[exit code {result.exit_code}]", details)
        return ToolResult.text(text, details=details)

    async def _start_background(self, command: str, box: sandbox.Sandbox | None, notes: list[str],
                                shown_details: dict[str, Any] | None) -> ToolResult:
        if self.processes is None:
            return failure("background commands are not available here")
        try:
            process = await self.processes.start(self.session_id, command, str(self.workspace.cwd),
                                                 spill_dir=self.workspace.root / ".pi" / "tmp", sandbox=box,
                                                 writable=self.workspace.roots)
        except TooManyProcesses as exc:
            return failure(str(exc))
        text = [f"Started background process {process.id} (pid {process.proc.pid}): {command}", *notes,
                output_text(process, 0)]
        if box is not None and not box.network:
            text.append("[sandboxed without network: a port it opens is reachable from within it only]")
        details: dict[str, Any] = {"exitCode": None, "truncated": False,
                                   "fullOutputPath": str(process.path) if process.path else None,
                                   "sandboxed": box is not None, "processId": process.id, **(shown_details or {})}
        return ToolResult.text("\n".join(text), details=details)
