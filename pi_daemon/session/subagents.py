"""Subagents: the ``task`` tool runs a prompt the model wrote in a child session of its own.

A child is a real session (its own file in ``.pi/sessions/``, header ``parentSessionId`` and
``parentToolCallId``, its own events, ``seq`` and usage), opened by the session manager
(:meth:`.manager.SessionManager.open_child`) and configured from its parent in one place,
:func:`inherit`. It works with some of its parent's own tool objects: never a tool the parent
lacks, never ``task`` (no recursion), the same files, editor, confinement and change log (what
a child changes is part of its parent's run), and the same permission gate, which knows whose
child it is ("for this session" answers of the parent hold in the child, not the reverse).

The parent hears ``subagent_start`` and ``subagent_end``; the end is written to the parent's
file as a ``subagent`` entry carrying the child's usage, so the parent's totals include it.
While the child works, the task call's ``tool_execution_update`` carries its progress (its
answer so far and the tools it called). Aborting the child (``abort`` of its session) ends
the task call with an error result; aborting the parent aborts every child it is waiting for.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Literal, Sequence

import attrs

from ..cancel import CancelToken
from ..converter import from_wire
from ..events import AgentSettled, MessageEnd, MessageUpdate, SubagentEnd, SubagentStart, TextDeltaEvent, \
    ToolExecutionStart
from ..llm.model import Model
from ..llm.registry import ModelUnavailable
from ..messages import AssistantMessage, ToolResult, Usage
from ..tools.base import Tool, ToolUpdate
from .agent_session import AgentSession, SessionError
from .rebuild import entry_usage
from .store import SessionReadOnly, SessionWriteError

if TYPE_CHECKING:
    from .manager import SessionManager

TASK = "task"
ABORTED = "the subagent was aborted before it finished"
STOPPED = "the user rejected a call of the subagent and stopped the run"
PROGRESS_EVERY_S = 0.1  # the answer's text streams into the task call's progress at most this often
PROGRESS_CHARS = 8000  # the progress shows the end of what the child did, at most this much


class TaskRefused(Exception):
    """A task call that cannot start a subagent; the text says why (the tool's error result)."""


def inherit(parent: AgentSession, child: AgentSession) -> None:
    """Configure a just-opened child from its parent: the one place that says what a subagent
    takes over (its model and thinking level are chosen when its file is made, in
    :meth:`.manager.SessionManager.open_child`). Its tool calls follow the parent's mode as it is at
    each call (the permission check reads it); it starts with that mode, so plan mode's note reaches it."""
    child.apply_mode(parent.mode)
    child.retry = attrs.evolve(parent.retry)
    child.compaction = attrs.evolve(parent.compaction)


def pick_tools(available: Sequence[Tool], wanted: Sequence[str] | None) -> list[Tool]:
    """The parent's tools a child gets: all but ``task``, or those ``wanted`` names."""
    own = [t for t in available if t.name != TASK]
    if wanted is None:
        return own
    names = {t.name for t in own}
    if TASK in wanted:
        raise TaskRefused("a subagent cannot start subagents of its own: leave 'task' out of tools")
    unknown = [n for n in wanted if n not in names]
    if unknown:
        raise TaskRefused(f"unknown tool{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}: a "
                          f"subagent can only be given tools this session has ({', '.join(sorted(names))})")
    return [t for t in own if t.name in wanted]


def total_usage(entries: Sequence[dict[str, Any]]) -> Usage:
    """What every model call recorded in a session file used, summed."""
    total = Usage()
    for entry in entries:
        raw = entry_usage(entry)
        if raw is None:
            continue
        try:
            usage = from_wire(raw, Usage)
        except Exception:  # noqa: BLE001 - an unreadable usage counts as none
            continue
        total.input += usage.input
        total.output += usage.output
        total.cache_read += usage.cache_read
        total.cache_write += usage.cache_write
        total.total_tokens += usage.total_tokens
        for field in ("input", "output", "cache_read", "cache_write", "total"):
            setattr(total.cost, field, getattr(total.cost, field) + getattr(usage.cost, field))
    return total


def _brief(name: str, args: Any) -> str:
    args = args if isinstance(args, dict) else {}
    target = next((args[k] for k in ("path", "command", "pattern") if isinstance(args.get(k), str)), "")
    return f"[{name}] {target}".rstrip()


class Progress:
    """Follows a child's events: its answer so far and its tool calls, as the task call's partial result."""

    def __init__(self, on_update: ToolUpdate) -> None:
        self.on_update = on_update
        self.parts: list[str] = []
        self.streaming = ""
        self.sent_at = 0.0
        self.settled: AgentSettled | None = None

    def text(self) -> str:
        text = "\n".join(p for p in [*self.parts, self.streaming] if p)
        return text if len(text) <= PROGRESS_CHARS else "…" + text[-PROGRESS_CHARS:]

    def _add(self, part: str) -> None:
        """Keep a finished part; only the last PROGRESS_CHARS are ever shown, so older parts go
        (a long child would otherwise make every update join all it ever did)."""
        self.parts.append(part)
        kept = sum(len(p) + 1 for p in self.parts)
        while len(self.parts) > 1 and kept - len(self.parts[0]) - 1 >= PROGRESS_CHARS:
            kept -= len(self.parts.pop(0)) + 1

    async def _send(self) -> None:
        self.sent_at = time.monotonic()
        text = self.text()
        if text:
            await self.on_update(ToolResult.text(text))

    async def __call__(self, event: Any) -> None:
        if type(event) is MessageUpdate:
            delta = event.assistant_message_event
            if isinstance(delta, TextDeltaEvent):
                self.streaming += delta.delta
                if time.monotonic() - self.sent_at >= PROGRESS_EVERY_S:
                    await self._send()
        elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
            self.streaming = ""
            answer = event.message.text()
            if answer:
                self._add(answer)
                await self._send()
        elif isinstance(event, ToolExecutionStart):
            self._add(_brief(event.tool_name, event.args))
            await self._send()
        elif isinstance(event, AgentSettled):
            self.settled = event


Status = Literal["completed", "failed", "aborted"]


def _outcome(child: AgentSession, progress: Progress, aborted: bool) -> tuple[Status, ToolResult]:
    """The child's status and the task call's result: its final answer, or why there is none."""
    if aborted or (progress.settled is not None and progress.settled.aborted):
        return "aborted", ToolResult.text(f"Error: {ABORTED} (its session: {child.id}).", is_error=True)
    if progress.settled is not None and progress.settled.stop_reason == "rejected":
        return "aborted", ToolResult.text(f"Error: {STOPPED} (its session: {child.id}).", is_error=True)
    last = next((m for m in reversed(child.messages) if isinstance(m, AssistantMessage)), None)
    if last is None or last.stop_reason in ("error", "aborted"):
        why = (last.error_message if last is not None else None) or child.agent.state.error or "it gave no answer"
        return "failed", ToolResult.text(f"Error: the subagent failed: {why} (its session: {child.id}).",
                                         is_error=True)
    return "completed", ToolResult.text(last.text() or "(the subagent ended without any text)")


class TaskTool(Tool):
    """``task``: run a subagent. One per top-level session (it knows whose calls it serves)."""

    name = TASK
    label = "task"
    read_only = True  # itself: its child follows the parent's mode, so in plan mode it changes nothing either
    description = (
        "Start a subagent: a fresh agent with its own context that works on `prompt` and answers with "
        "text, which becomes this tool's result. It sees nothing of this conversation, so put everything "
        "it needs in the prompt. Use it for self-contained work (research, a focused change); several "
        "task calls in one message run at the same time. `description`: a few words for the user. "
        "`tools`: only these of your tools (e.g. [\"read\", \"grep\", \"find\", \"ls\"] for read-only "
        "work; default: all of yours). `model`: \"provider/id\" of another model.")
    parameters = {
        "type": "object",
        "properties": {
            "prompt": {"type": "string", "minLength": 1, "description": "the subagent's instructions, complete"},
            "description": {"type": "string", "description": "what it does, in a few words (shown to the user)"},
            "tools": {"type": "array", "items": {"type": "string"},
                      "description": "the names of the tools it may use (default: all of yours but task)"},
            "model": {"type": "string", "description": "provider/id (default: your model)"},
        },
        "required": ["prompt"],
        "additionalProperties": False,
    }

    def __init__(self, manager: "SessionManager", session_id: str) -> None:
        self.manager = manager
        self.session_id = session_id

    def _model(self, parent: AgentSession, spec: str | None) -> Model | None:
        registry = self.manager.registry
        try:
            return registry.usable(registry.resolve(spec)) if spec else parent.model
        except ModelUnavailable as exc:
            raise TaskRefused(f"the model {spec!r} cannot be used: {exc}") from None

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult:
        parent = self.manager.sessions.get(self.session_id)
        if parent is None:
            return ToolResult.text("Error: the session running this task call is closed.", is_error=True)
        prompt: str = args["prompt"]
        description = args.get("description") or next(iter(prompt.strip().splitlines()), "")[:80]
        try:
            tools = pick_tools(parent.agent.state.tools, args.get("tools"))
            model = self._model(parent, args.get("model"))
            child = self.manager.open_child(parent, call_id, tools, model)
        except TaskRefused as exc:
            return ToolResult.text(f"Error: no subagent was started: {exc}.", is_error=True)
        except (SessionError, SessionReadOnly, SessionWriteError) as exc:
            return ToolResult.text(f"Error: the subagent could not be started: {exc}", is_error=True)
        return await self._run(parent, child, call_id, description, prompt, on_update)

    async def _run(self, parent: AgentSession, child: AgentSession, call_id: str, description: str, prompt: str,
                   on_update: ToolUpdate) -> ToolResult:
        progress = Progress(on_update)
        unsubscribe = child.subscribe(progress)
        aborted = False
        status: Status = "failed"
        try:
            await parent.emit(SubagentStart(tool_call_id=call_id, session_id=child.id, description=description))
            try:
                await child.prompt(prompt)
                await child.wait_settled()
            except asyncio.CancelledError:  # the parent's run was aborted: so is its child
                aborted = True
                await asyncio.shield(child.abort())
                raise
            except (SessionError, SessionReadOnly, SessionWriteError) as exc:
                child.agent.state.error = str(exc)
            status, result = _outcome(child, progress, aborted)
            if progress.settled is not None and progress.settled.stop_reason == "rejected":
                parent.agent.stop_after_tools()  # the user's stop holds for the run that started it too
            return result
        finally:
            unsubscribe()
            usage = total_usage(child.store.entries)
            try:
                await parent.emit(SubagentEnd(tool_call_id=call_id, session_id=child.id,
                                              status="aborted" if aborted else status,
                                              usage=usage, cost=usage.cost.total))
            except SessionWriteError:
                pass  # reported by the parent, whose run stops
            if self.manager.sessions.get(child.id) is child:  # unless the client closed it already
                await self.manager.close(child)


__all__ = ["ABORTED", "TaskRefused", "TaskTool", "inherit", "pick_tools", "total_usage"]
