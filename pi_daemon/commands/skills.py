"""Skills in the Agent Skills format: ``<dir>/SKILL.md`` with ``name`` and ``description``.

Found under ``$PI_DAEMON_HOME/skills/``, ``<workspace>/.pi/skills/`` and
``<workspace>/.claude/skills/`` (a folder holding ``SKILL.md``, up to four levels
down); the first one found keeps a name. The names and descriptions join the system
prompt; the model loads a body when it needs it with the ``skill`` tool, which also
reads the files bundled beside ``SKILL.md`` (``.pi/`` and the home folder are beyond the
``read`` tool's reach). ``/skill:name request`` puts the body into the prompt itself.

A skill's files are read only when they resolve inside the skill's folder, and a
workspace skill's folder only when it resolves inside the workspace; each read (the
listing, the body, a bundled file) opens the file then, beneath the skill's root, with
no symlink followed on the way (:func:`.files.read_text`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import attrs

from ..messages import ToolResult
from ..tools.base import Tool
from . import frontmatter
from ..guard.safe_open import read_beneath
from .files import Folder, collect, inside, read_text

NAME = re.compile(r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,63}\Z")
MAX_BYTES = 256 * 1024
MAX_DEPTH = 4


@attrs.frozen
class Skill:
    name: str
    description: str
    file: str
    source: str  # "home" or "workspace"
    root: str  # what its files are read beneath: the workspace, or the home skills folder
    model_invocable: bool = True

    @property
    def folder(self) -> Path:
        return Path(self.file).parent


def skill_files(folder: Path) -> list[Path]:
    found = []
    for depth in range(MAX_DEPTH):
        found += sorted(folder.glob("/".join(["*"] * depth + ["SKILL.md"])))
    return found


def read(path: Path, source: str, root: Path) -> Skill | str:
    try:
        fields, _ = frontmatter.split(read_text(path, root, MAX_BYTES))
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot be read ({exc})"
    name = fields.get("name") or path.parent.name
    if not NAME.match(name):
        return f"{path}: name {name!r} is not lowercase letters, digits and single hyphens (at most 64)"
    description = fields.get("description", "").strip()
    if not description:
        return f"{path}: no description, so the model could never know when to use it"
    return Skill(name=name, description=description[:1024], file=str(path), source=source, root=str(root),
                 model_invocable=fields.get("disable-model-invocation", "").lower() != "true")


def _confined(path: Path, root: Path | None) -> bool:
    return inside(path.parent, root) and inside(path, path.parent)


def load(folders: list[Folder]) -> tuple[list[Skill], list[str]]:
    return collect(folders, skill_files, _confined, read, lambda s: f"skill {s.name!r}")


def body(skill: Skill) -> str:
    """The instructions, read again now (beneath the skill's root: it may have changed). OSError
    or UnicodeDecodeError saying why it cannot be read."""
    return frontmatter.split(read_text(Path(skill.file), Path(skill.root), MAX_BYTES))[1].strip()


def prompt_section(skills: list[Skill]) -> str:
    listed = [s for s in skills if s.model_invocable]
    if not listed:
        return ""
    lines = "\n".join(f"- {s.name}: {s.description}" for s in listed)
    return ("# Skills\n\nSkills are instructions for particular kinds of work. When a task matches a skill's "
            "description, load it with the skill tool (name) before you start, and follow it; read the files it "
            f"mentions with the skill tool too (name and file, relative to the skill).\n\n{lines}")


def invocation(skill: Skill, request: str) -> str:
    """The prompt ``/skill:name request`` sends."""
    text = f'Use the skill "{skill.name}" for this request. Its instructions:\n\n{body(skill)}'
    text += ("\n\n(Files the skill mentions are read with the skill tool: name "
             f'"{skill.name}" and the file\'s path relative to the skill.)')
    return f"{text}\n\nRequest: {request}" if request else text


class SkillTool(Tool):
    name = "skill"
    label = "skill"
    description = ("Load a skill's instructions (its SKILL.md), or with `file` one of the files bundled with it "
                   "(a path relative to the skill's folder).")
    parameters = {"type": "object", "properties": {
        "name": {"type": "string", "description": "the skill's name"},
        "file": {"type": "string", "description": "a file of the skill, relative to its folder (optional)"}},
        "required": ["name"]}

    def __init__(self, skills: Callable[[], list[Skill]]) -> None:
        self.skills = skills  # the current skills (the files may change while a session is open)

    async def execute(self, call_id: str, args: dict[str, Any], cancel: Any, on_update: Any) -> ToolResult:
        skills = {s.name: s for s in self.skills()}
        skill = skills.get(args["name"])
        if skill is None:
            known = ", ".join(sorted(skills)) or "none"
            return ToolResult.text(f"There is no skill {args['name']!r}. Skills: {known}.", is_error=True)
        if not args.get("file"):
            try:
                return ToolResult.text(body(skill), details={"file": skill.file})
            except (OSError, UnicodeDecodeError) as exc:
                return ToolResult.text(f"The skill {skill.name!r} cannot be read: {exc}", is_error=True)
        path = skill.folder / args["file"]
        if not inside(path, skill.folder):
            return ToolResult.text(f"{args['file']!r} is not a file of the skill {skill.name!r}", is_error=True)
        try:  # beneath the skill's root, whatever its folder became since it was listed
            data = read_beneath(skill.root, path, MAX_BYTES)
        except OSError as exc:
            return ToolResult.text(f"{args['file']!r} of the skill {skill.name!r} cannot be read: "
                                   f"{exc.strerror or exc}", is_error=True)
        return ToolResult.text(data.decode("utf-8", errors="replace"), details={"file": str(path)})
