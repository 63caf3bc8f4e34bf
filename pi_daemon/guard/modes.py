"""Session modes: how far the agent's tools go without the user.

- ``plan``: only tools that change nothing run — ``read``, ``grep``, ``find``, ``ls``, the
  language tools, ``task`` (its subagent is in plan mode too), and MCP tools their server
  declares read-only (``readOnlyHint``); any
  other call gets an error result naming the mode. The model is asked for a plan.
- ``ask`` (the default): the permission rules decide, asking the user where they say so.
- ``auto-edit``: ``write`` and ``edit`` run without asking (a reject rule still refuses,
  and a path inside ``.git/`` still asks); ``bash`` and MCP tools ask as in ``ask``.

A mode is read at each tool call, so a change mid-run applies from the next call.
"""

from __future__ import annotations

from typing import Any

MODES = ("plan", "ask", "auto-edit")
DEFAULT_MODE = "ask"
AUTO_EDITED = ("write", "edit")

DESCRIPTIONS = {
    "plan": "Read-only: the agent investigates and proposes a plan; nothing is changed.",
    "ask": "The agent asks before it writes, edits or runs a command.",
    "auto-edit": "The agent writes and edits files without asking; commands still ask.",
}

PLAN_NOTE = ("\n\n# Plan mode\nThe session is in plan mode: only read-only tools run (reading, searching, "
             "listing, language features). Investigate what you need, then answer with a concise, numbered plan "
             "of the changes you would make and how you would check them. Do not try to change files or run "
             "commands; the user switches to a mode that carries the plan out.")


def refusal(mode: str, tool: str, tool_object: Any) -> str | None:
    """Why ``mode`` does not let a call of ``tool`` run, or None."""
    if mode == "plan" and not getattr(tool_object, "read_only", False):
        return (f"the session is in plan mode, where only read-only tools run; `{tool}` changes things, so it "
                "was not run. Finish the plan instead; the user can switch to ask or auto-edit mode to carry it out")
    return None


def auto_allowed(mode: str, tool: str) -> bool:
    """Whether ``mode`` lets ``tool`` run without asking (rules that refuse still apply)."""
    return mode == "auto-edit" and tool in AUTO_EDITED


def system_prompt(prompt: str, mode: str) -> str:
    """The system prompt for a mode (plan mode adds its note)."""
    base = prompt.removesuffix(PLAN_NOTE)
    return base + PLAN_NOTE if mode == "plan" else base
