"""The system prompt: the tools, the workspace, the date and platform, project instructions.

Project instructions are the ``AGENTS.md`` (and ``CLAUDE.md``) files found in the
workspace and every folder above it, the outermost first. ``settings.json`` may replace
the prompt (``systemPrompt.replace``) or extend it (``systemPrompt.append``).
"""

from __future__ import annotations

import datetime as dt
import platform
from pathlib import Path
from typing import Any, Sequence

from .. import settings as config

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")

GUIDELINES = """Guidelines:
- Read a file before you edit it; use edit for changes and write only for new files or full rewrites.
- Use grep and find to locate code instead of guessing paths; use bash for builds, tests and git.
- Paths are relative to the workspace; you cannot reach outside it.
- Be concise. When you are done, say what you changed and how you checked it."""


def instructions(workspace: Path) -> list[tuple[Path, str]]:
    found = []
    for folder in [workspace, *workspace.parents]:
        for name in INSTRUCTION_FILES:
            path = folder / name
            if path.is_file():
                try:
                    found.append((path, path.read_text(encoding="utf-8").strip()))
                except (OSError, UnicodeDecodeError):
                    continue
    return list(reversed(found))


def build(workspace: Path, tools: Sequence[Any], today: dt.date | None = None) -> str:
    settings = config.load(workspace).get("systemPrompt", {})
    if isinstance(settings.get("replace"), str):
        base = settings["replace"]
    else:
        tool_lines = "\n".join(f"- {t.name}: {t.description}" for t in tools) or "- (no tools)"
        base = ("You are an expert coding assistant, working in the user's project through their editor. "
                "You read files, run commands, edit code and write new files to do what the user asks.\n\n"
                f"Available tools:\n{tool_lines}\n\n{GUIDELINES}")
    facts = (f"Workspace: {workspace}\nDate: {(today or dt.date.today()).isoformat()}\n"
             f"Platform: {platform.system().lower()} ({platform.machine()})")
    parts = [base, facts]
    project = instructions(workspace)
    if project:
        parts.append("# Project instructions\n\n" + "\n\n".join(f"## {p}\n\n{text}" for p, text in project))
    if isinstance(settings.get("append"), str):
        parts.append(settings["append"])
    return "\n\n".join(parts)
