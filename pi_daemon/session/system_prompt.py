"""The system prompt: the tools, the workspace, the date and platform, project instructions.

Project instructions are the ``AGENTS.md`` (and ``CLAUDE.md``) files found in the
session's working folder and every folder above it, the outermost first — only those that resolve
inside the confinement roots (the workspace and the allowed roots), and above them only
those that resolve to a file in their own folder (:func:`_read_instruction`). ``settings.json`` may replace
the prompt (``systemPrompt.replace``) or extend it (``systemPrompt.append``). The skills'
names and descriptions are listed (:mod:`..commands.skills`); their bodies are loaded on demand.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import platform
from pathlib import Path
from typing import Any, Sequence

from .. import settings as config
from ..commands.skills import prompt_section as skills_section
from ..guard.safe_open import read_beneath, read_regular

log = logging.getLogger(__name__)

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md")
MAX_INSTRUCTION_BYTES = 1024 * 1024

GUIDELINES = """Guidelines:
- Read a file before you edit it; use edit for changes and write only for new files or full rewrites.
- Use grep and find to locate code instead of guessing paths; use bash for builds, tests and git.
- Paths are relative to the workspace; you cannot reach outside it.
- Be concise. When you are done, say what you changed and how you checked it."""


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def _read_instruction(path: Path, roots: Sequence[Path]) -> str | None:
    """The text of one instruction file, or None when it may not be sent to the model.

    Inside the confinement roots the file must resolve inside them too (a symlink to
    ``/etc/passwd`` is not read). In a folder above them it must resolve to a file in
    that same folder (a symlink out of it is not read either)."""
    folder = path.parent.resolve()
    if not os.path.lexists(path):
        return None
    target = path.resolve()
    within = [r for r in roots if _inside(folder, [r])]
    allowed = _inside(target, roots) if within else target.parent == folder
    if not allowed:
        log.warning("not reading %s: it resolves to %s, outside the folders the agent may read", path, target)
        return None
    try:  # opened now, as the file tools open: no symlink followed on the way, a regular file, bounded
        data = read_beneath(max(within, key=lambda r: len(str(r))), path, MAX_INSTRUCTION_BYTES) if within \
            else read_regular(target, MAX_INSTRUCTION_BYTES)
        return data.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        log.warning("not reading %s: %s", path, exc)
        return None


def instructions(workspace: Path, roots: Sequence[Path] | None = None) -> list[tuple[Path, str]]:
    roots = [Path(r).resolve() for r in (roots or [workspace])]
    found = []
    for folder in [workspace, *workspace.parents]:
        for name in INSTRUCTION_FILES:
            path = folder / name
            text = _read_instruction(path, roots)
            if text is not None:
                found.append((path, text))
    return list(reversed(found))


def build(workspace: Path, tools: Sequence[Any], today: dt.date | None = None,
          roots: Sequence[Path] | None = None, skills: Sequence[Any] = (), cwd: Path | None = None) -> str:
    """The prompt for a session working in ``cwd`` (default: the workspace); settings come from the workspace."""
    settings = config.load(workspace).get("systemPrompt", {})
    if isinstance(settings.get("replace"), str):
        base = settings["replace"]
    else:
        tool_lines = "\n".join(f"- {t.name}: {t.description}" for t in tools) or "- (no tools)"
        base = ("You are an expert coding assistant, working in the user's project through their editor. "
                "You read files, run commands, edit code and write new files to do what the user asks.\n\n"
                f"Available tools:\n{tool_lines}\n\n{GUIDELINES}")
    folder = f"\nWorking folder: {cwd} (relative paths start here)" if cwd is not None and cwd != workspace else ""
    facts = (f"Workspace: {workspace}{folder}\nDate: {(today or dt.date.today()).isoformat()}\n"
             f"Platform: {platform.system().lower()} ({platform.machine()})")
    parts = [base, facts]
    project = instructions(cwd or workspace, roots or [workspace])
    if project:
        parts.append("# Project instructions\n\n" + "\n\n".join(f"## {p}\n\n{text}" for p, text in project))
    section = skills_section(list(skills))
    if section:
        parts.append(section)
    if isinstance(settings.get("append"), str):
        parts.append(settings["append"])
    return "\n\n".join(parts)
