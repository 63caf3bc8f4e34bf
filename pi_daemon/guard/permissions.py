"""Permission to run a tool call: the rules, asking the user, or the non-interactive policy.

Calls of the tools in ``ask`` (default: write, edit, bash) and of every MCP tool
(``<server>__<tool>``) need permission, decided in this order:

1. a ``reject`` rule — remembered by the user, or shipped in the workspace's
   ``.pi/permissions.json`` — refuses the call;
2. a tool the user allowed up front (``--allow`` / ``--yes``; ``--allow mcp`` for every MCP tool) runs;
3. an ``allow`` rule runs the call: remembered by the user (``$PI_DAEMON_HOME``), given
   for this session (or for the session a subagent's session descends from), or shipped by the workspace once the user trusts it;
4. otherwise the client is asked, if it can be; the request states what "always" (or
   "for this session") would remember;
5. without a client that can ask, ``without_client`` decides (default: refuse, naming
   the flag that allows the tool).

A ``write`` or ``edit`` inside ``.git/`` (git runs what its config and hooks name) is the
exception: no flag, policy, tool-wide or shipped rule allows it, only the user's answer for
that path (asked each time, or a path rule the user remembered for it).

The user's answer can steer the call: a reason with a refusal becomes the call's result
(:class:`Declined`), ``reject_and_stop`` ends the run, and an allow with edited arguments
runs the edited call — which the agent validates and brings back here (``ctx.user_edit``)
to be checked again by the mode, the reject rules and the ``.git/`` rule, never asked again.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Awaitable, Callable

import attrs

from . import trust
from ..mcp.names import is_mcp_tool
from ..cancel import CancelToken, Cancelled, race
from . import modes
from .repositories import in_git_folder
from .modes import DEFAULT_MODE
from .permission_rules import ASK_DEFAULT, Rule, allows, rejects, rule_for
from .permission_store import RememberedAnswers, workspace_rules

log = logging.getLogger(__name__)

OUTCOMES = ("allow_once", "allow_session", "allow_always", "reject_once", "reject_always", "reject_and_stop",
            "cancelled")
OPTIONS = OUTCOMES[:6]
TIMED_OUT = "timeout"  # what an asker returns when nobody answered in time (never on the wire)
REASON_CHARS = 4000  # of the user's reason, what the model is given
SHOWN_ARGS_CHARS = 4000  # of an edited call's arguments, what its result repeats


@attrs.frozen
class Answer:
    outcome: str  # one of OUTCOMES, or TIMED_OUT
    content: str | None = None  # allowing a call that proposed a file text: the text the user accepts instead
    reason: str | None = None  # rejecting: the user's words
    edited_args: dict[str, Any] | None = None  # allowing: the arguments to run the call with instead


@attrs.frozen
class Declined:
    """The user's refusal of a call: ``text`` is its whole result; ``stop``: the run ends with it."""
    text: str
    stop: bool = False


@attrs.frozen
class UserEdit:
    """A call the user allowed with edited arguments, brought back to be checked again."""
    outcome: str  # the allow outcome it was given
    asked_args: dict[str, Any]  # the arguments the user was asked about


def declined(outcome: str, reason: str | None, tool: str) -> Declined | str:
    """The result of a refusal: the user's words when given (bounded), else the plain refusal."""
    words = (reason or "").strip()[:REASON_CHARS]
    if outcome == "reject_and_stop":
        return Declined("The user rejected this call and stopped the run" + (f": {words}" if words else "."),
                        stop=True)
    if words:
        return Declined(f"The user declined this call: {words}")
    return f"the user declined to allow this {tool} call; do not retry it unchanged — ask or try another way"


def what_ran(args: dict[str, Any]) -> str:
    """The first line of an edited call's result."""
    shown = json.dumps(args, ensure_ascii=False)
    if len(shown) > SHOWN_ARGS_CHARS:
        shown = shown[:SHOWN_ARGS_CHARS] + f"… ({len(shown) - SHOWN_ARGS_CHARS} more characters)"
    return f"The user edited this call before it ran; what ran: {shown}"


# () -> what a write or edit would leave in its file (a ``tools.base.Proposal``), or None; computed
# once, when a face that can show it calls it (a ``content`` answer counts only then)
Propose = Callable[[], Awaitable[Any]]

# (session id, tool call id, tool name, args, title, options, rule "always" would remember, propose)
#   -> the answer, or None: nobody to ask
Asker = Callable[[str, str, str, dict[str, Any], str, list[str], Rule, Propose], Awaitable[Answer | None]]


def title_for(tool: str, args: dict[str, Any]) -> str:
    if is_mcp_tool(tool):
        server, _, name = tool.partition("__")
        return f"Call {name} of the MCP server {server}"
    if tool == "bash":
        return f"Run `{args.get('command', '')}`"
    if tool in ("write", "edit"):
        return f"{'Write' if tool == 'write' else 'Edit'} {args.get('path', '')}"
    return f"Use {tool}"


def in_git(tool: str, args: dict[str, Any]) -> bool:
    """A ``write`` or ``edit`` naming a path inside ``.git/``: it needs its own permission."""
    path = args.get("path")
    return tool in ("write", "edit") and isinstance(path, str) and in_git_folder(path)


NOBODY_TO_ASK = "no client that can ask is connected"


def how_to_allow(tool: str) -> str:
    return (f"{tool} calls need the user's permission and {NOBODY_TO_ASK}; "
            f"to allow them without asking, start pi-daemon (or `pi-daemon ask`) with `--allow {tool}`, "
            f"or `--yes` for {', '.join(ASK_DEFAULT)}")


class PermissionGate:
    def __init__(self, workspace_root: Path, *, ask: tuple[str, ...] = ASK_DEFAULT, without_client: str = "reject",
                 allowed: tuple[str, ...] = (), asker: Asker | None = None) -> None:
        self.root = workspace_root
        self.ask = ask
        self.without_client = without_client
        self.allowed = allowed
        self.asker = asker
        self.remembered = RememberedAnswers(workspace_root)
        self.session_rules: dict[str, list[Rule]] = {}
        self.parents: dict[str, str] = {}  # a subagent's session id -> the session that started it
        self._told_untrusted = False

    def _session_rules(self, session_id: str) -> list[Rule]:
        """The "for this session" answers given in the session or in a session it descends from (a
        subagent has its parent's, never the reverse)."""
        rules: list[Rule] = []
        seen: set[str] = set()
        current: str | None = session_id
        while current is not None and current not in seen:
            seen.add(current)
            rules += self.session_rules.get(current, [])
            current = self.parents.get(current)
        return rules

    def _workspace_allow(self, shipped: list[Rule]) -> list[Rule]:
        if not shipped or trust.is_trusted(self.root):
            return shipped
        if not self._told_untrusted:
            self._told_untrusted = True
            log.warning("ignoring the allow rules of %s: the workspace is not trusted",
                        self.root / ".pi" / "permissions.json")
        return []

    def decide(self, session_id: str, tool: str, args: dict[str, Any]) -> str | None:
        """``"reject"``, ``"allow"``, or None: the user has to be asked."""
        mine, shipped = self.remembered.load(), workspace_rules(self.root)
        if rejects(mine["reject"] + shipped["reject"], tool, args, self.root):
            return "reject"
        if in_git(tool, args):  # only the user's own answer for such a path, never a flag or a tool-wide rule
            own = [r for r in mine["allow"] + self._session_rules(session_id)
                   if r.scope == "path" and in_git_folder(r.pattern or "")]
            return "allow" if allows(own, tool, args, self.root) else None
        if tool in self.allowed or is_mcp_tool(tool) and "mcp" in self.allowed:
            return "allow"
        rules = mine["allow"] + self._session_rules(session_id) + self._workspace_allow(shipped["allow"])
        return "allow" if allows(rules, tool, args, self.root) else None

    async def check(self, session_id: str, ctx: Any, cancel: CancelToken,
                    mode: str = DEFAULT_MODE) -> str | Declined | None:
        """A reason to block the call, the user's refusal, or None to let it run (a ``before_tool_call``
        hook; an allow with edited arguments sets ``ctx.edited_args``); ``mode`` is the session's (:mod:`.modes`)."""
        tool, args = ctx.tool_call.name, ctx.args
        refused = modes.refusal(mode, tool, getattr(ctx, "tool", None))
        if refused is not None:
            return refused
        edit = getattr(ctx, "user_edit", None)
        if isinstance(edit, UserEdit):
            return self._check_edit(session_id, tool, args, edit)
        if tool not in self.ask and not is_mcp_tool(tool) and not in_git(tool, args):
            return None
        decided = self.decide(session_id, tool, args)
        if decided == "allow" or decided is None and modes.auto_allowed(mode, tool) and not in_git(tool, args):
            return None
        if decided == "reject":
            return f"the user has declined {tool} calls like this one for good"
        rule = rule_for(tool, args, self.root)
        answer = None
        if self.asker is not None:
            try:
                answer = await race(self._ask(session_id, ctx, rule), cancel)
            except Cancelled:
                return "the run was aborted while the user was being asked"
        if answer is None:
            if in_git(tool, args):
                return (f"{args.get('path')!r} is inside .git/, whose configuration and hooks git runs as programs: "
                        "changing it needs the user's explicit permission each time (no flag or policy gives it), "
                        f"and {NOBODY_TO_ASK}")
            return None if self.without_client == "allow" else how_to_allow(tool)
        outcome = answer.outcome
        if outcome == TIMED_OUT:
            return (f"nobody answered the permission request for this {tool} call in time, so it was "
                    "not run; do not retry it unchanged")
        if outcome.startswith("allow") and answer.edited_args is not None:
            ctx.edited_args = answer.edited_args  # checked again once valid; its own rule is remembered then
            ctx.edit_outcome = outcome
            return None
        if outcome == "allow_session":
            self.session_rules.setdefault(session_id, []).append(rule)
        elif outcome in ("allow_always", "reject_always"):
            self.remembered.add("allow" if outcome == "allow_always" else "reject", rule)
        if outcome.startswith("allow"):
            proposal = getattr(ctx, "proposal", None)
            if answer.content is not None and proposal is not None and answer.content != proposal.text:
                ctx.accepted = answer.content  # the tool writes the user's version
            return None
        if outcome == "cancelled":
            return "the permission request was cancelled; the call was not run"
        return declined(outcome, answer.reason, tool)

    def _check_edit(self, session_id: str, tool: str, args: dict[str, Any], edit: UserEdit) -> str | None:
        """The edited call of a user's allow: what the rules refuse stays refused (the answer allowed
        only this call, so nothing else is asked); an allow "for this session" or "always" keeps the
        rule of the edited call."""
        mine, shipped = self.remembered.load(), workspace_rules(self.root)
        if rejects(mine["reject"] + shipped["reject"], tool, args, self.root):
            return f"the user has declined {tool} calls like the edited one for good"
        if in_git(tool, args) and args.get("path") != edit.asked_args.get("path"):
            return (f"the edited call names {args.get('path')!r}, inside .git/, which is not the path the user "
                    "was asked about; changing .git/ needs its own permission")
        rule = rule_for(tool, args, self.root)
        if edit.outcome == "allow_session":
            self.session_rules.setdefault(session_id, []).append(rule)
        elif edit.outcome == "allow_always":
            self.remembered.add("allow", rule)
        return None

    async def _ask(self, session_id: str, ctx: Any, rule: Rule) -> Answer | None:
        """Ask the user; a face that shows what a write or edit would leave in its file gets it from
        the tool's own code (``ctx.proposal``, which the user's ``content`` is compared with)."""
        assert self.asker is not None
        tool, args = ctx.tool_call.name, ctx.args
        made = getattr(getattr(ctx, "tool", None), "propose", None)
        computed = False

        async def propose() -> Any:
            nonlocal computed
            if not computed:
                computed = True
                ctx.proposal = await made(args) if made is not None else None
            return ctx.proposal

        return await self.asker(session_id, ctx.tool_call.id, tool, args, title_for(tool, args), list(OPTIONS),
                                rule, propose)
