"""Every slash command of a workspace, and what a typed line asks for.

Commands come from three sources, in this order of precedence: the daemon's built-in
commands, prompt templates, and skills (as ``skill:<name>``). Templates and skills are
text, not code: they are read from the workspace whether or not it is trusted, like
``AGENTS.md`` (they cannot start a process or lower a protection: every tool call the
model makes from them passes the same permission checks). A workspace file never
replaces the user's own template or skill of the same name, nor a built-in command.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import attrs

from ..home import home_dir
from . import skills as S
from . import templates as T

COMMAND = re.compile(r"/([A-Za-z0-9][A-Za-z0-9_.:-]*)(?:\s+|\Z)")


@attrs.frozen
class Builtin:
    name: str
    description: str
    argument_hint: str | None = None


BUILTINS = (
    Builtin("compact", "Summarise the older conversation now", "[focus]"),
    Builtin("new", "Start a new session"),
    Builtin("model", "Choose the model", "<provider/id>"),
    Builtin("thinking", "Choose the thinking level", "<off|minimal|low|medium|high|xhigh>"),
    Builtin("mode", "Choose the mode: plan (read-only, a plan), ask, or auto-edit", "<plan|ask|auto-edit>"),
    Builtin("export", "Export the session", "[html|markdown]"),
)
BUILTIN_NAMES = {b.name for b in BUILTINS}


@attrs.frozen
class Entry:
    name: str
    description: str
    source: str  # builtin, template, skill
    argument_hint: str | None = None
    file: str | None = None


@attrs.frozen
class Invocation:
    """What a typed line asks for. ``kind``: builtin, template, skill or text."""

    kind: str
    name: str = ""
    args: str = ""
    text: str = ""  # what goes to the model (template and skill: the expansion; text: the line)


class UnknownCommand(Exception):
    pass


class Catalog:
    def __init__(self, workspace: str | Path) -> None:
        self.workspace = Path(workspace)
        self._signature: tuple[tuple[str, int, int], ...] = ()
        self.templates: list[T.Template] = []
        self.skills: list[S.Skill] = []
        self.problems: list[str] = []
        self.refresh()

    def _template_folders(self) -> list[tuple[Path, str, Path | None]]:
        return [(home_dir() / "prompts", "home", None),
                (self.workspace / ".pi" / "prompts", "workspace", self.workspace)]

    def _skill_folders(self) -> list[tuple[Path, str, Path | None]]:
        return [(home_dir() / "skills", "home", None),
                (self.workspace / ".pi" / "skills", "workspace", self.workspace),
                (self.workspace / ".claude" / "skills", "workspace", self.workspace)]

    def signature(self) -> tuple[tuple[str, int, int], ...]:
        """Changes whenever a command file is added, removed or edited (cheap: a few stats)."""
        stamps = []
        for folder, _, _ in self._template_folders() + self._skill_folders():
            if not folder.is_dir():
                continue
            paths = T.template_files(folder) if folder.name == "prompts" else S.skill_files(folder)
            for path in paths:
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                stamps.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(sorted(stamps))

    def refresh(self) -> bool:
        """Read the files again if they changed; True when they did."""
        signature = self.signature()
        if signature == self._signature and self._signature:
            return False
        changed = signature != self._signature
        self._signature = signature
        self.templates, template_problems = T.load(self._template_folders())
        self.skills, skill_problems = S.load(self._skill_folders())
        shadowed = [f"{t.file}: /{t.name} is a built-in command; the template is not used"
                    for t in self.templates if t.name in BUILTIN_NAMES]
        self.templates = [t for t in self.templates if t.name not in BUILTIN_NAMES]
        self.problems = template_problems + skill_problems + shadowed
        return changed

    def entries(self) -> list[Entry]:
        return ([Entry(b.name, b.description, "builtin", b.argument_hint) for b in BUILTINS]
                + [Entry(t.name, t.description, "template", t.argument_hint or None, t.file) for t in self.templates]
                + [Entry(f"skill:{s.name}", s.description, "skill", "[request]", s.file) for s in self.skills])

    def parse(self, line: str) -> Invocation:
        """What ``line`` asks for; raises UnknownCommand for ``/name`` that is no command."""
        if line.startswith("//"):
            return Invocation("text", text=line[1:])
        match = COMMAND.match(line)
        if match is None:  # not a command: plain text, paths such as /usr/bin/x included
            return Invocation("text", text=line)
        name, args = match.group(1), line[match.end():].strip()
        if name in BUILTIN_NAMES:
            return Invocation("builtin", name, args)
        self.refresh()
        template = next((t for t in self.templates if t.name == name), None)
        if template is not None:
            return Invocation("template", name, args, T.expand(template.body, T.split_args(args)))
        if name.startswith("skill:"):
            skill = next((s for s in self.skills if s.name == name[6:]), None)
            if skill is not None:
                try:
                    return Invocation("skill", name, args, S.invocation(skill, args))
                except (OSError, UnicodeDecodeError) as exc:  # changed since it was listed
                    raise UnknownCommand(f"/{name} cannot be used: its SKILL.md cannot be read now ({exc})") from None
        known = ", ".join(f"/{e.name}" for e in self.entries())
        raise UnknownCommand(f"unknown command /{name} (commands: {known}); "
                             f"to send text that starts with '/', type '//' first")
