"""``update_plan``: the agent's plan as a checklist, replaced whole by each call.

The tool checks the plan and reports it (``details``: :class:`..tools.details.PlanDetails`); no
other record is kept: a session's plan is what the last successful call on its branch said
(:mod:`..session.plan_state`), so a loaded, forked, rewound or navigated session has the right
one by construction. The tool holds no state, so a subagent shares it and keeps its own plan.
"""

from __future__ import annotations

from typing import Any

from ..cancel import CancelToken
from ..converter import to_wire
from ..events import PlanEntry
from ..messages import ToolResult
from .base import Tool, ToolUpdate
from .details import PlanDetails

UPDATE_PLAN = "update_plan"
MAX_STEPS = 50
MAX_STEP_CHARS = 500
MAX_EXPLANATION_CHARS = 4_000
STATUSES = ("pending", "in_progress", "completed")


class PlanRefused(Exception):
    pass


def checked(args: dict[str, Any]) -> PlanDetails:
    """The plan a call states; PlanRefused says what is wrong with it."""
    steps = args.get("plan")
    if not isinstance(steps, list):
        raise PlanRefused("`plan` must be a list of {step, status}")
    if len(steps) > MAX_STEPS:
        raise PlanRefused(f"the plan has {len(steps)} steps; at most {MAX_STEPS} are allowed")
    entries = []
    for number, item in enumerate(steps, 1):
        step = item.get("step") if isinstance(item, dict) else None
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(step, str) or not step.strip():
            raise PlanRefused(f"step {number} has no text")
        if len(step) > MAX_STEP_CHARS:
            raise PlanRefused(f"step {number} has {len(step)} characters; at most {MAX_STEP_CHARS} are allowed")
        if status not in STATUSES:
            raise PlanRefused(f"step {number}: status must be one of {', '.join(STATUSES)}")
        entries.append(PlanEntry(step=step, status=status))
    doing = [n for n, e in enumerate(entries, 1) if e.status == "in_progress"]
    if len(doing) > 1:
        raise PlanRefused(f"steps {', '.join(map(str, doing))} are all in_progress; at most one step may be")
    explanation = args.get("explanation")
    if explanation is not None and not isinstance(explanation, str):
        raise PlanRefused("`explanation` must be text")
    if explanation is not None and len(explanation) > MAX_EXPLANATION_CHARS:
        raise PlanRefused(f"the explanation has {len(explanation)} characters; at most {MAX_EXPLANATION_CHARS}")
    return PlanDetails(entries=entries, explanation=explanation or None)


def stored_plan(details: Any) -> PlanDetails | None:
    """The plan a stored successful result's ``details`` holds; None when they hold none (a hand-edited file)."""
    if not isinstance(details, dict):
        return None
    try:
        return checked({"plan": details.get("entries"), "explanation": details.get("explanation")})
    except PlanRefused:
        return None


class UpdatePlanTool(Tool):
    name = UPDATE_PLAN
    label = "plan"
    read_only = True  # it changes no file: offered in every mode
    description = (
        "Keep a plan of your work as a checklist the user sees. Each call replaces the whole plan: give every "
        "step with its status (pending, in_progress or completed; at most one in_progress). Use it for work "
        "of several steps: make the plan first, then mark steps as you go. `explanation`: why the plan "
        "changed, optional.")
    parameters = {
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "maxLength": MAX_EXPLANATION_CHARS},
            "plan": {
                "type": "array", "maxItems": MAX_STEPS,
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string", "minLength": 1, "maxLength": MAX_STEP_CHARS},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["plan"],
        "additionalProperties": False,
    }

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult:
        try:
            plan = checked(args)
        except PlanRefused as exc:
            return ToolResult.text(f"Error: the plan was not updated: {exc}.", is_error=True)
        done = sum(e.status == "completed" for e in plan.entries)
        return ToolResult.text(f"Plan updated: {len(plan.entries)} steps, {done} completed.", details=to_wire(plan))
