"""``ask_user``: the agent asks the user a question, with choices and/or room to type.

Only a session whose client can answer gets the tool (the face gives the ``ask`` function
that sends the question, or none); so the model is never offered a question nobody can
answer. An abort while the question waits cancels the call (the face withdraws the
request); a question nobody answers in time ends as ``timeout``.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable

import attrs

from ..cancel import CancelToken
from ..converter import to_wire
from ..messages import ToolResult
from .base import Tool, ToolUpdate
from .details import AskUserDetails

ASK_USER = "ask_user"
MAX_QUESTION_CHARS = 4_000
MAX_OPTIONS = 20
MAX_LABEL_CHARS = 200
MAX_DESCRIPTION_CHARS = 1_000
MAX_ANSWER_CHARS = 20_000  # what a client's typed answer may bring into the context


@attrs.frozen
class Question:
    question: str
    options: list[tuple[str, str | None]]  # (label, description)
    multi_select: bool
    allow_text: bool


# (tool call id, the question) -> how it ended
Ask = Callable[[str, Question], Awaitable[AskUserDetails]]


def answer_text(details: AskUserDetails) -> str:
    """The tool result the model reads."""
    if details.outcome == "timeout":
        return "Nobody answered the question in time."
    if details.outcome == "dismissed":
        return "The user dismissed the question without answering."
    lines = []
    if details.selected:
        lines.append(f"The user answered: {', '.join(details.selected)}")
    if details.text:
        lines.append(f"The user wrote: {details.text}")
    return "\n".join(lines) or "The user answered without choosing an option or writing anything."


def checked_answer(question: Question, selected: Any, text: Any) -> AskUserDetails:
    """A client's answer, kept to what was offered: labels not offered are dropped, one only
    unless ``multiSelect``, text only when ``allowText`` (or there are no options), bounded."""
    labels = [label for label, _ in question.options]
    chosen = [s for s in selected if isinstance(s, str) and s in labels] if isinstance(selected, list) else []
    chosen = list(dict.fromkeys(chosen))
    if not question.multi_select:
        chosen = chosen[:1]
    typed = text if isinstance(text, str) and (question.allow_text or not labels) and text.strip() else None
    if typed is not None and len(typed) > MAX_ANSWER_CHARS:
        typed = typed[:MAX_ANSWER_CHARS] + f"\n[the answer was cut at {MAX_ANSWER_CHARS} characters]"
    return AskUserDetails(outcome="answered", selected=chosen or None, text=typed)


def answer_of(question: Question, result: Any) -> AskUserDetails:
    """A ``user/ask`` answer; anything but ``answered`` counts as dismissed."""
    if not isinstance(result, dict) or result.get("outcome") != "answered":
        return AskUserDetails(outcome="dismissed")
    return checked_answer(question, result.get("selected"), result.get("text"))


class AskUserTool(Tool):
    name = ASK_USER
    label = "ask"
    read_only = True  # asking changes nothing: offered in every mode
    sequential = True  # one question at a time
    description = (
        "Ask the user a question and wait for the answer: when you need a decision or information only "
        "the user has. `options`: choices to pick from (label, and description when the label needs one); "
        "`multiSelect`: more than one may be picked; `allowText`: the user may type an answer instead or "
        "as well (always possible without options). Do not ask what you can find out yourself.")
    parameters = {
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 1, "maxLength": MAX_QUESTION_CHARS},
            "options": {
                "type": "array", "maxItems": MAX_OPTIONS,
                "items": {
                    "type": "object",
                    "properties": {
                        "label": {"type": "string", "minLength": 1, "maxLength": MAX_LABEL_CHARS},
                        "description": {"type": "string", "maxLength": MAX_DESCRIPTION_CHARS},
                    },
                    "required": ["label"],
                    "additionalProperties": False,
                },
            },
            "multiSelect": {"type": "boolean"},
            "allowText": {"type": "boolean"},
        },
        "required": ["question"],
        "additionalProperties": False,
    }

    def __init__(self, ask: Ask) -> None:
        self.ask = ask

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult:
        options = [(o["label"], o.get("description")) for o in args.get("options") or []]
        if len({label for label, _ in options}) < len(options):
            return ToolResult.text("Error: two options have the same label; each needs its own.", is_error=True)
        question = Question(question=args["question"], options=options,
                            multi_select=bool(args.get("multiSelect")),
                            allow_text=bool(args.get("allowText")) or not options)
        details = await self.ask(call_id, question)
        return ToolResult.text(answer_text(details), details=to_wire(details))
