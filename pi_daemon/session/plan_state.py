"""A session's plan: what the last successful ``update_plan`` call on its current branch set.

Nothing but that call's result is kept (its ``details``), so the plan follows the branch: a
load, fork, rewind or navigation gets the plan as it stood there. It is worked out again only
when the branch's leaf moved. A session opened from its index (:mod:`.load_index`) has its
plan from there until its entries are read: opening it never reads the file for the plan.
"""

from __future__ import annotations

from typing import Any

from ..events import PlanUpdated
from ..messages import ToolResultMessage
from ..tools.details import PlanDetails
from ..tools.plan import UPDATE_PLAN, stored_plan
from .store import SessionStore

_UNSET = object()


def is_plan_result(message: Any) -> bool:
    """A successful ``update_plan`` result: the session's plan changed."""
    return isinstance(message, ToolResultMessage) and message.tool_name == UPDATE_PLAN and not message.is_error


def branch_plan(branch: list[dict[str, Any]]) -> tuple[PlanDetails, dict[str, Any] | None]:
    """The plan on ``branch``, and the stored ``details`` it was read from (None: no plan)."""
    for entry in reversed(branch):
        message = entry.get("message") if entry.get("type") == "message" else None
        if isinstance(message, dict) and message.get("role") == "toolResult" \
                and message.get("toolName") == UPDATE_PLAN and not message.get("isError"):
            details = message.get("details")
            plan = stored_plan(details)
            if plan is not None:
                return plan, details
    return PlanDetails(entries=[]), None


class PlanState:
    def __init__(self, store: SessionStore) -> None:
        self.store = store
        self._leaf: Any = _UNSET
        self._plan = PlanDetails(entries=[])

    @property
    def current(self) -> PlanDetails:
        if not self.store.read:  # opened from its index, not read yet: the index says
            return stored_plan(self.store.facts.plan) or self._plan
        leaf = self.store.leaf_id
        if leaf != self._leaf:
            self._plan, self._leaf = branch_plan(self.store.branch())[0], leaf
        return self._plan

    def event(self) -> PlanUpdated:
        plan = self.current
        return PlanUpdated(entries=list(plan.entries), explanation=plan.explanation)
