"""The ``details`` of the built-in tools' results: what a client gets beyond the model's text.

A tool result's ``details`` (in ``tool_execution_end.result`` and in ``toolResult``
messages) is a JSON object whose shape depends on the tool; these classes declare it for
the built-in tools that have one (``read``, ``grep``, ``find`` and ``ls`` have none). The
protocol's JSON Schema lists them under ``x-tools``; a failed call (``isError``) may carry
the same details (``bash`` does) or none.
"""

from __future__ import annotations

from typing import Literal

import attrs

from ..events import IntroducedDiagnostic, PlanEntry


@attrs.define
class BashDetails:
    """How the command ended, and the agent's edits the editor saved before it ran (shown paths;
    also in each of its updates' details)."""

    exit_code: int | None
    truncated: bool
    full_output_path: str | None
    sandboxed: bool
    saved_files: list[str] | None = None


@attrs.define
class WriteDetails:
    """The file written (absolute path), whether it was created, and what it broke (with
    the client's diagnostics), and whether it is the user's version rather than the model's."""

    path: str
    created: bool
    introduced: list[IntroducedDiagnostic] | None = None
    user_edited: bool | None = None


@attrs.define
class EditDetails:
    """The file edited (absolute path), the unified diff of the change, and what it broke
    (with the client's diagnostics), and whether it is the user's version rather than the model's."""

    path: str
    diff: str
    introduced: list[IntroducedDiagnostic] | None = None
    user_edited: bool | None = None


@attrs.define
class PlanDetails:
    """``update_plan``: the plan the call set (the session's plan until the next successful call)."""

    entries: list[PlanEntry]
    explanation: str | None = None


@attrs.define
class AskUserDetails:
    """``ask_user``: how the question ended and what the user chose or typed."""

    outcome: Literal["answered", "dismissed", "timeout"]
    selected: list[str] | None = None
    text: str | None = None


TOOL_DETAILS: dict[str, type] = {"bash": BashDetails, "write": WriteDetails, "edit": EditDetails,
                                 "update_plan": PlanDetails, "ask_user": AskUserDetails}
