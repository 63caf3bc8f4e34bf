"""The built-in coding tools, bound to one workspace."""

from __future__ import annotations

from .base import Tool
from .bash import BashTool
from .commands import FindTool, GrepTool, LsTool
from .file_access import FileAccess
from .files import EditTool, ReadTool, WriteTool
from ..guard.workspace import Workspace


TOOL_CLASSES = (ReadTool, WriteTool, EditTool, BashTool, GrepTool, FindTool, LsTool)


def coding_tools(workspace: Workspace, files: FileAccess | None = None) -> list[Tool]:
    """The tools; ``files`` is how the file tools reach files (default: the disk)."""
    return [cls(workspace, files) for cls in TOOL_CLASSES]
