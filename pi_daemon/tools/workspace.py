"""The boundary around the workspace: every path a tool touches is resolved here.

A path is taken relative to the workspace (absolute paths are allowed only when they
land inside it). It is resolved with symlinks followed, and refused when the result is
outside the workspace and outside the extra roots the user allowed. Writes to one file
are serialised, so parallel tool calls cannot interleave them.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from ..cancel import CancelToken
from ..messages import ToolResult
from .base import Tool, ToolUpdate


class PathRefused(Exception):
    """A path outside the allowed roots, or otherwise unusable; the text says why."""


class Workspace:
    def __init__(self, root: str, extra_roots: list[str] | None = None) -> None:
        self.root = Path(root).resolve()
        self.extra_roots = [Path(r).resolve() for r in (extra_roots or [])]
        self._locks: dict[Path, asyncio.Lock] = {}

    def allow(self, roots: list[str]) -> None:
        """Let tools reach these folders too (settings, or the client's ``allowedRoots``)."""
        for root in roots:
            resolved = Path(os.path.expanduser(root)).resolve()
            if resolved not in self.extra_roots:
                self.extra_roots.append(resolved)

    @property
    def roots(self) -> list[Path]:
        return [self.root, *self.extra_roots]

    def resolve(self, path: str | None) -> Path:
        if path is None or path == "":
            return self.root
        if "\x00" in path:
            raise PathRefused("the path contains a NUL byte")
        candidate = Path(os.path.expanduser(path)) if path.startswith("~") else Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
        resolved = candidate.resolve(strict=False)
        if not any(resolved == r or resolved.is_relative_to(r) for r in self.roots):
            allowed = ", ".join(str(r) for r in self.roots)
            raise PathRefused(
                f"{path!r} resolves to {resolved}, which is outside the workspace (allowed: {allowed}); "
                "use a path inside the workspace"
            )
        return resolved

    def show(self, path: Path) -> str:
        """A path as the model should see it: relative to the workspace when inside it."""
        try:
            return str(path.relative_to(self.root)) or "."
        except ValueError:
            return str(path)

    def lock(self, path: Path) -> asyncio.Lock:
        return self._locks.setdefault(path, asyncio.Lock())


def failure(text: str, details: Any = None) -> ToolResult:
    return ToolResult.text(text, details=details, is_error=True)


class WorkspaceTool(Tool):
    """A built-in tool: it works on one workspace. ``run`` may raise PathRefused anywhere;
    that becomes an error result saying why, in the tool's own words."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    async def execute(self, call_id, args, cancel, on_update):
        try:
            return await self.run(args, cancel, on_update)
        except PathRefused as exc:
            return failure(str(exc))

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        raise NotImplementedError
