"""The base of the built-in tools that work on one workspace, reaching files through its seam."""

from __future__ import annotations

from typing import Any

from ..cancel import CancelToken
from ..messages import ToolResult
from .base import Tool, ToolUpdate
from .file_access import DiskFiles
from ..guard.workspace import PathRefused, Workspace


def failure(text: str, details: Any = None) -> ToolResult:
    return ToolResult.text(text, details=details, is_error=True)


class WorkspaceTool(Tool):
    """A built-in tool: it works on one workspace. ``run`` may raise PathRefused anywhere;
    that becomes an error result saying why, in the tool's own words."""

    def __init__(self, workspace: Workspace, files: Any = None) -> None:
        self.workspace = workspace
        self.files = files or DiskFiles(workspace)

    async def execute(
        self, call_id: str, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate
    ) -> ToolResult | str:
        try:
            return await self.run(args, cancel, on_update)
        except PathRefused as exc:
            return failure(str(exc))

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        raise NotImplementedError
