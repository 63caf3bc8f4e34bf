"""Permission to run a tool call: remembered answers, asking the user, or the policy.

Calls of the tools in ``ask`` (default: write, edit, bash) need permission. A remembered
``allow_always`` / ``reject_always`` answer (in ``<workspace>/.pi/permissions.json``, for
the tool, and for bash for that command prefix) decides at once; otherwise the client is
asked, if it can be; otherwise ``without_client`` decides (default: allow — the tools are
confined to the workspace anyway).
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path
from typing import Any, Awaitable, Callable

from ..cancel import CancelToken, Cancelled, race

log = logging.getLogger(__name__)

OUTCOMES = ("allow_once", "allow_always", "reject_once", "reject_always", "cancelled")
ASK_DEFAULT = ("write", "edit", "bash")

# (session id, tool call id, tool name, args, title, options) -> outcome, or None: nobody to ask
Asker = Callable[[str, str, str, dict, str, list[str]], Awaitable[str | None]]


def command_prefix(command: str) -> str:
    """What an ``allow_always`` for bash covers: the program and its first argument."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    return " ".join(words[:2])


def title_for(tool: str, args: dict[str, Any]) -> str:
    if tool == "bash":
        return f"Run `{args.get('command', '')}`"
    if tool in ("write", "edit"):
        return f"{'Write' if tool == 'write' else 'Edit'} {args.get('path', '')}"
    return f"Use {tool}"


class PermissionGate:
    def __init__(self, workspace_root: Path, *, ask: tuple[str, ...] = ASK_DEFAULT, without_client: str = "allow",
                 asker: Asker | None = None) -> None:
        self.file = workspace_root / ".pi" / "permissions.json"
        self.ask = ask
        self.without_client = without_client
        self.asker = asker

    def _load(self) -> dict[str, list[dict[str, str]]]:
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"allow": [], "reject": []}
        return {k: [r for r in data.get(k, []) if isinstance(r, dict)] for k in ("allow", "reject")}

    @staticmethod
    def _matches(rule: dict[str, str], tool: str, args: dict[str, Any]) -> bool:
        if rule.get("tool") != tool:
            return False
        prefix = rule.get("prefix")
        if tool == "bash" and prefix:
            command = args.get("command", "")
            return command == prefix or command.startswith(prefix + " ")
        return True

    def remembered(self, tool: str, args: dict[str, Any]) -> str | None:
        rules = self._load()
        if any(self._matches(r, tool, args) for r in rules["reject"]):
            return "reject"
        if any(self._matches(r, tool, args) for r in rules["allow"]):
            return "allow"
        return None

    def remember(self, kind: str, tool: str, args: dict[str, Any]) -> None:
        rules = self._load()
        rule = {"tool": tool}
        if tool == "bash":
            rule["prefix"] = command_prefix(args.get("command", ""))
        if rule not in rules[kind]:
            rules[kind].append(rule)
        self.file.parent.mkdir(parents=True, exist_ok=True)
        self.file.write_text(json.dumps(rules, indent=2) + "\n", encoding="utf-8")

    async def check(self, session_id: str, ctx: Any, cancel: CancelToken) -> str | None:
        """A reason to block the call, or None to let it run (a ``before_tool_call`` hook)."""
        tool, args = ctx.tool_call.name, ctx.args
        if tool not in self.ask:
            return None
        remembered = self.remembered(tool, args)
        if remembered == "allow":
            return None
        if remembered == "reject":
            return f"the user has declined {tool} calls like this one for good (.pi/permissions.json)"
        outcome = None
        if self.asker is not None:
            try:
                outcome = await race(self.asker(session_id, ctx.tool_call.id, tool, args, title_for(tool, args),
                                                list(OUTCOMES[:4])), cancel)
            except Cancelled:
                return "the run was aborted while the user was being asked"
        if outcome is None:
            if self.without_client == "allow":
                return None
            return f"{tool} calls need the user's permission, and no client that can ask is connected"
        if outcome in ("allow_always", "reject_always"):
            self.remember("allow" if outcome == "allow_always" else "reject", tool, args)
        if outcome.startswith("allow"):
            return None
        if outcome == "cancelled":
            return "the permission request was cancelled; the call was not run"
        return f"the user declined to allow this {tool} call; do not retry it unchanged — ask or try another way"
