"""Permission rules: what one remembered answer covers, and whether rules match a call.

A rule is ``{"tool", "scope", "pattern"}``:

* ``tool`` scope — every call of the tool;
* ``path`` scope (``write``, ``edit``, any tool with a ``path``) — calls whose path matches
  ``pattern``, a path or a glob relative to the workspace (``*`` stays within a folder, ``**`` crosses folders);
* ``exact`` / ``prefix`` scope (``bash``) — see :mod:`.command_rules`.

The older form ``{"tool": "bash", "prefix": "git status"}`` reads as a prefix rule and
``{"tool": "write"}`` as a tool rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable

import attrs

from ..mcp.names import is_mcp_tool
from . import command_rules

ASK_DEFAULT = ("write", "edit", "bash")  # the tools that ask before they run, unless told otherwise

SCOPES = ("exact", "prefix", "path", "tool")


@attrs.frozen
class Rule:
    tool: str
    scope: str = "tool"
    pattern: str | None = None

    def to_json(self) -> dict[str, str]:
        data = {"tool": self.tool, "scope": self.scope}
        if self.pattern is not None:
            data["pattern"] = self.pattern
        return data

    @classmethod
    def from_json(cls, data: Any) -> Rule | None:
        """The rule, or None for something that is not one (it is then ignored)."""
        if not isinstance(data, dict) or not isinstance(data.get("tool"), str):
            return None
        tool, scope, pattern = data["tool"], data.get("scope"), data.get("pattern")
        if scope is None:  # the older form
            if tool == "bash" and isinstance(data.get("prefix"), str):
                return cls(tool, "prefix", data["prefix"])
            return cls(tool, "tool")
        if scope not in SCOPES or (scope != "tool" and not isinstance(pattern, str)):
            return None
        if scope in ("exact", "prefix") and tool != "bash" or scope == "path" and tool == "bash":
            return None
        return cls(tool, scope, pattern if scope != "tool" else None)


def rules_from(items: Any) -> list[Rule]:
    rules = [Rule.from_json(item) for item in (items if isinstance(items, list) else [])]
    return [r for r in rules if r is not None]


# --- paths ---------------------------------------------------------------------------


def _absolute(root: Path, path: str) -> str:
    """The path a rule is matched against; when it cannot be resolved (a loop, or a name being
    swapped as it is read) its spelling, normalised, stands: the tool confines what it opens itself."""
    if not path:
        return ""
    try:
        return str((root / path).resolve())
    except OSError:
        return os.path.normpath(os.path.join(root.resolve(), path))


def _glob(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _path_matches(root: Path, pattern: str, path: str) -> bool:
    if not path:
        return False
    base = str(root.resolve())
    full = pattern if pattern.startswith("/") else f"{base}/{pattern}"
    return bool(_glob(full).match(_absolute(root, path)))


def shown_path(root: Path, path: str) -> str:
    """A path as a rule states it: relative to the workspace when inside it."""
    absolute = Path(_absolute(root, path))
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute)


# --- matching ------------------------------------------------------------------------


def _bash_rules(rules: Iterable[Rule]) -> list[tuple[str, str]]:
    return [(r.scope, r.pattern or "") for r in rules if r.tool == "bash"]


def allows(rules: Iterable[Rule], tool: str, args: dict[str, Any], root: Path) -> bool:
    rules = [r for r in rules if r.tool == tool]
    if tool == "bash":
        return bool(rules) and command_rules.covers(_bash_rules(rules), command_rules.parse(_command(args)))
    return any(_matches(r, args, root) for r in rules)


def rejects(rules: Iterable[Rule], tool: str, args: dict[str, Any], root: Path) -> bool:
    rules = [r for r in rules if r.tool == tool]
    if tool == "bash":
        return bool(rules) and command_rules.hits(_bash_rules(rules), command_rules.parse(_command(args)))
    return any(_matches(r, args, root) for r in rules)


def _matches(rule: Rule, args: dict[str, Any], root: Path) -> bool:
    if rule.scope == "tool":
        return True
    path = args.get("path")
    return rule.scope == "path" and isinstance(path, str) and _path_matches(root, rule.pattern or "", path)


def _command(args: dict[str, Any]) -> str:
    command = args.get("command")
    return command if isinstance(command, str) else ""


# --- what "always" would remember ----------------------------------------------------


def rule_for(tool: str, args: dict[str, Any], root: Path) -> Rule:
    if is_mcp_tool(tool):  # its arguments mean nothing here: the tool is the unit
        return Rule(tool, "tool")
    if tool == "bash":
        scope, pattern = command_rules.suggest(command_rules.parse(_command(args)))
        return Rule(tool, scope, pattern)
    path = args.get("path")
    if isinstance(path, str) and path:
        return Rule(tool, "path", shown_path(root, path))
    return Rule(tool, "tool")


def describe(rule: Rule) -> str:
    """A line for the user saying what the rule covers."""
    if rule.scope == "exact":
        return f"exactly the command `{rule.pattern}`"
    if rule.scope == "prefix":
        return f"commands starting with `{rule.pattern}`"
    if rule.scope == "path":
        return f"{rule.tool} calls on `{rule.pattern}`"
    return f"every {rule.tool} call"
