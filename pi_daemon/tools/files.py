"""File tools: ``read``, ``write`` and ``edit``; they reach files through their :mod:`.file_access`.

``write`` and ``edit`` propose the text a call would leave (the user reviews it before allowing
the call) and, when the user accepts another text instead, write exactly that and tell the model
what the user changed (a unified diff, proposal → written).
"""

from __future__ import annotations

import base64
import difflib
import os
import re
from typing import Any

from ..cancel import CancelToken
from ..messages import ImageContent, TextContent, ToolResult
from .base import Proposal, ToolUpdate
from .file_access import looks_binary
from ..guard.workspace import EDIT, READ, WRITE, PathRefused
from .workspace_tool import WorkspaceTool, failure

MAX_LINES = 2000
MAX_BYTES = 50 * 1024
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}
MAGIC = {b"\x89PNG": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
MAX_DIFF_LINES = 200  # of the diff proposal -> written that a result shows the model
USER_EDITED = "The user changed your edit before accepting it. What was written differs from your proposal:"


def unified_diff(before: str, after: str, shown: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{shown}", f"b/{shown}"))


def bounded(diff: str) -> str:
    lines = diff.splitlines()
    more = len(lines) - MAX_DIFF_LINES
    return "\n".join(lines[:MAX_DIFF_LINES]) + (f"\n[{more} more diff lines not shown]" if more > 0 else "")


class ProposingTool(WorkspaceTool):
    """``write`` or ``edit``: a call changes one file, whose new text it can say before it runs."""

    purpose = WRITE

    async def execute_accepted(self, call_id: str, args: dict[str, Any], proposal: Proposal, text: str,
                               cancel: CancelToken, on_update: ToolUpdate) -> ToolResult | str:
        try:
            return await self._write_accepted(args, proposal, text)
        except PathRefused as exc:
            return failure(str(exc))

    async def _write_accepted(self, args: dict[str, Any], proposal: Proposal, text: str) -> ToolResult:
        data = text.encode("utf-8")
        try:
            target = self.workspace.locate(args["path"], self.purpose).path
            async with self.workspace.lock(target):
                before = await self.files.current(args["path"]) if self.purpose == EDIT else None
                existed, target = await self.files.write(args["path"], data, self.purpose)
        except OSError as exc:
            return failure(f"cannot write the user's version of {args['path']!r}: {exc.strerror or exc}")
        shown = self.workspace.show(target)
        changed = bounded(unified_diff(proposal.text, text, shown))
        details: dict[str, Any] = {"path": str(target), "userEdited": True}
        if before is None:
            details["created"] = not existed
        else:  # an edit's details.diff is what changed in the file
            details["diff"] = unified_diff((before[0] or b"").decode("utf-8", "replace")
                                           .replace("\r\n", "\n").replace("\r", "\n"), text, shown)
        verb = "Overwrote" if existed else "Created"
        return ToolResult.text(f"{verb} {shown} ({len(data)} bytes) with the user's version.\n\n"
                               f"{USER_EDITED}\n{changed}", details=details)


class ReadTool(WorkspaceTool):
    read_only = True
    name = "read"
    description = (
        "Read a file of the workspace. Text comes with line numbers counted from 1; at most "
        f"{MAX_LINES} lines or {MAX_BYTES // 1024} KB at a time, with a note saying how to read on "
        "(offset). Images (png, jpeg, gif, webp) come back as images."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, relative to the workspace"},
            "offset": {"type": "integer", "minimum": 1, "description": "first line to read (1-based)"},
            "limit": {"type": "integer", "minimum": 1, "description": "how many lines to read"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        offset, limit = args.get("offset", 1), args.get("limit")
        window = False
        try:
            if "offset" in args or "limit" in args:  # one more line than shown tells whether more follows
                data, target, window = await self.files.read_lines(args["path"], offset,
                                                                   min(limit or MAX_LINES, MAX_LINES) + 1)
            else:
                data, target = await self.files.read(args["path"], READ)
        except OSError as exc:
            return failure(f"cannot read {args['path']!r}: {exc.strerror}")
        mime = IMAGE_TYPES.get(target.suffix.lower()) or next(
            (m for magic, m in MAGIC.items() if data.startswith(magic)), None)
        if data[:12].startswith(b"RIFF") and data[8:12] == b"WEBP":
            mime = "image/webp"
        if mime:
            return ToolResult(content=[TextContent(text=f"{self.workspace.show(target)} ({mime}, {len(data)} bytes)"),
                                       ImageContent(data=base64.b64encode(data).decode(), mime_type=mime)])
        if looks_binary(data):
            return failure(f"{args['path']!r} is a binary file ({len(data)} bytes); it cannot be read as text")
        return ToolResult.text(self._page(data.decode("utf-8", "replace"), offset, limit, window))

    @staticmethod
    def _page(text: str, offset: int, limit: int | None, window: bool = False) -> str:
        """Lines ``offset``.. of ``text``: the whole file, or (``window``) only the lines from
        ``offset`` on, as an editor gave them (then the file's length is not known)."""
        lines = text.splitlines()
        skip = offset - 1 if window else 0  # the file's line index of lines[0]
        total = skip + len(lines)
        if window and not lines and offset > 1:
            return f"[offset {offset} is past the end of the file]"
        if total and offset > total:
            return f"[offset {offset} is past the end: the file has {total} lines]"
        wanted = min(limit or MAX_LINES, MAX_LINES)
        out: list[str] = []
        size, n = 0, offset - 1
        while n < total and len(out) < wanted:
            line = lines[n - skip]
            if len(line) > MAX_BYTES:
                line = line[:MAX_BYTES] + " … [line cut]"
            if size + len(line) > MAX_BYTES and out:
                break
            out.append(f"{n + 1:>6}\t{line}")
            size += len(line) + 1
            n += 1
        if n < total:
            of = "" if window else f" of {total}"
            out.append(f"[Showing lines {offset}-{n}{of}. Use offset={n + 1} to read on.]")
        return "\n".join(out) if out else "(empty file)"


class WriteTool(ProposingTool):
    name = "write"
    description = "Create or overwrite a file of the workspace with the given content; parent folders are created."
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, relative to the workspace"},
            "content": {"type": "string", "description": "the whole new content"},
        },
        "required": ["path", "content"],
        "additionalProperties": False,
    }

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        try:
            target = self.workspace.locate(args["path"], WRITE).path
            async with self.workspace.lock(target):
                existed, target = await self.files.write(args["path"], args["content"].encode("utf-8"), WRITE)
        except OSError as exc:
            return failure(f"cannot write {args['path']!r}: {exc.strerror}")
        size = len(args["content"].encode())
        verb = "Overwrote" if existed else "Created"
        return ToolResult.text(f"{verb} {self.workspace.show(target)} ({size} bytes)",
                               details={"path": str(target), "created": not existed})

    async def propose(self, args: dict[str, Any]) -> Proposal | None:
        try:
            target = self.workspace.locate(args["path"], WRITE).path
        except PathRefused:
            return None
        return Proposal(target, args["content"], os.path.lexists(target))


_QUOTES = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "\u00a0": " "})


def _normal(line: str) -> str:
    return re.sub(r"[ \t]+", " ", line.translate(_QUOTES)).strip()


def _find(original: str, old: str) -> list[tuple[int, int]]:
    """Spans of ``old`` in ``original``: exact matches, else whitespace/quote-normalised lines."""
    spans, start = [], 0
    while (i := original.find(old, start)) >= 0:
        spans.append((i, i + len(old)))
        start = i + 1
    if spans:
        return spans
    lines = original.splitlines(keepends=True)
    wanted = [_normal(x) for x in old.splitlines()]
    while wanted and not wanted[-1]:
        wanted.pop()
    if not wanted:
        return []
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    for n in range(len(lines) - len(wanted) + 1):
        if all(_normal(lines[n + k]) == wanted[k] for k in range(len(wanted))):
            end = offsets[n + len(wanted)]
            if lines[n + len(wanted) - 1].endswith("\n") and not old.endswith("\n"):
                end -= 1
            spans.append((offsets[n], end))
    return spans


class EditTool(ProposingTool):
    purpose = EDIT
    name = "edit"
    description = (
        "Edit a file by replacing text. Each oldText must appear exactly once in the current file "
        "(copy it exactly, with enough surrounding lines to be unique); edits must not overlap. "
        "Returns a unified diff."
    )
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path, relative to the workspace"},
            "edits": {
                "type": "array", "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {"oldText": {"type": "string", "minLength": 1}, "newText": {"type": "string"}},
                    "required": ["oldText", "newText"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["path", "edits"],
        "additionalProperties": False,
    }

    async def _updated(self, args: dict[str, Any]) -> tuple[str, str | ToolResult, Any]:
        """(the file's text, the text the edits make of it or the failure, its path)."""
        data, target = await self.files.read(args["path"], EDIT)
        # as text mode reads it: line ends become \n (and are written back so)
        original = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        return original, self._apply(original, args["edits"], self.workspace.show(target)), target

    async def propose(self, args: dict[str, Any]) -> Proposal | None:
        try:
            _, updated, target = await self._updated(args)
        except (OSError, PathRefused, UnicodeDecodeError):
            return None
        return None if isinstance(updated, ToolResult) else Proposal(target, updated, True)

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        try:
            target = self.workspace.locate(args["path"], EDIT).path
            async with self.workspace.lock(target):
                original, updated, target = await self._updated(args)
                if isinstance(updated, ToolResult):
                    return updated
                _, target = await self.files.write(args["path"], updated.encode("utf-8"), EDIT)
        except UnicodeDecodeError:
            return failure(f"{args['path']!r} is not UTF-8 text; it cannot be edited")
        except OSError as exc:
            return failure(f"cannot edit {args['path']!r}: {exc.strerror}")
        shown = self.workspace.show(target)
        diff = unified_diff(original, updated, shown)
        return ToolResult.text(f"Applied {len(args['edits'])} edit(s) to {shown}\n\n{diff}",
                               details={"path": str(target), "diff": diff})

    @staticmethod
    def _apply(original: str, edits: list[dict[str, Any]], shown: str = "the file") -> str | ToolResult:
        spans = []
        for n, edit in enumerate(edits, 1):
            found = _find(original, edit["oldText"])
            if not found:
                return failure(f"edit {n}: oldText was not found in {shown} (it may have changed since you read "
                               "it); no edit was applied: read the file again and copy the text exactly")
            if len(found) > 1:
                return failure(f"edit {n}: oldText matches {len(found)} places; include more surrounding lines "
                               "so it matches exactly one")
            spans.append((*found[0], edit["newText"], n))
        spans.sort()
        for (s1, e1, _, n1), (s2, _, _, n2) in zip(spans, spans[1:]):
            if s2 < e1:
                return failure(f"edits {n1} and {n2} overlap; merge them into one edit")
        updated = original
        for start, end, new, _ in reversed(spans):
            updated = updated[:start] + new + updated[end:]
        if updated == original:
            return failure("the edits change nothing: newText equals the text it replaces")
        return updated
