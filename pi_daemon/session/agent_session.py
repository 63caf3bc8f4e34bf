"""AgentSession: one conversation — an Agent, its file, its model state and its runs.

The session turns the agent's low-level runs into *accepted runs*: each ``prompt`` that
starts work, or ``continue``, ends with exactly one ``agent_settled`` once nothing will
happen by itself any more — after automatic retries of failed model requests, and after
compacting and retrying once when the context overflowed. Everything is written to the
session file before observers hear of it; what could not be written is not announced.
A failed write (disk full, I/O error) emits ``session_write_failed``, stops the run it
happened in, and leaves the conversation as the file holds it. A read-only session
refuses everything that would write.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

import attrs

from ..agent import Agent, AgentBusy, AgentError, convert_with_roles, make_user_message
from ..agent.queues import new_queue_id
from ..cancel import CancelToken
from ..converter import from_wire, to_wire
from ..events import (
    AgentEnd, AgentSettled, AgentStart, AutoRetryEnd, AutoRetryStart, BashExecutionUpdate, CompactionDetails,
    CompactionEnd, CompactionOutcome, CompactionStart, Diagnostics, IntroducedDiagnostic, MessageEnd, MessageStart,
    MessageUpdate, ModeChanged, ModelChanged, Observers, PlanUpdated, Replayed, ReplayEnd, SessionInfoChanged,
    SessionWriteFailed, ThinkingLevelChanged, ToolExecutionEnd,
)
from ..llm.errors import ProviderErrorDetail, is_context_overflow, is_retryable
from ..llm import picker
from ..llm.model import THINKING_LEVELS, Model
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..messages import BashExecutionMessage, ImageContent, SlashCommandUse, TextContent
from ..guard import modes
from ..tools.shell import run_shell
from . import compaction as C, kept_settings
from .rebuild import branch_message, context_entries, context_messages
from .plan_state import PlanState, is_plan_result
from .recorder import SessionRecorder
from .store import SessionReadOnly, SessionStore, SessionWriteError

log = logging.getLogger(__name__)


@attrs.define
class RetrySettings:
    enabled: bool = True
    max_attempts: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60_000


class EntryError(Exception):
    """An entry id that does not exist, or one that cannot be used for the request."""


def _answered(message: Any) -> bool:
    return getattr(message, "role", None) == "assistant" and message.stop_reason not in ("error", "aborted")


def _queued_size(message: Any) -> int:
    """Bytes of a queued message: its text and its images' data."""
    return sum(len(block.text.encode("utf-8", "surrogatepass")) if isinstance(block, TextContent)
               else len(block.data) if isinstance(block, ImageContent) else 0
               for block in (message.content if isinstance(message.content, list) else [TextContent(message.content)]))


MAX_QUEUED = 100  # steering and follow-up messages waiting, together
MAX_QUEUED_BYTES = 1 << 20  # their text and images


class SessionError(Exception):
    """A request the session refuses; ``kind`` is busy / state / model."""

    def __init__(self, kind: str, message: str, data: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.data = data  # what a client can do about it (a model refusal's reason)


class AgentSession:
    def __init__(self, registry: ModelRegistry, store: SessionStore, *, cwd: str, model: Model | None,
                 thinking_level: str = "off", messages: Sequence[Any] = (), name: str | None = None,
                 compaction: C.CompactionSettings | None = None, system_prompt: str = "",
                 tools: Sequence[Any] = ()) -> None:
        self.id = store.header["id"]
        self.store = store
        parent = store.header.get("parentSessionId")
        self.parent_session_id: str | None = parent if isinstance(parent, str) else None  # a subagent's
        self.file = str(store.path)
        self.cwd = cwd
        self.spill_dir = Path(cwd) / ".pi" / "tmp"  # where long user-command output goes (the workspace's)
        self.name = name
        self.registry = registry
        self.model = model
        # the stored model this session may not use until the workspace is trusted, and why
        self.model_withheld: tuple[tuple[str, str], str] | None = None
        self.compaction = compaction or C.CompactionSettings()
        self.retry = RetrySettings()
        self.agent = Agent(
            model,  # type: ignore[arg-type]  # None until a model is chosen; checked at prompt
            system_prompt=system_prompt, tools=tools, messages=messages,
            thinking_level=thinking_level,  # type: ignore[arg-type]
            convert_to_llm=convert_with_roles, transform_context=self._before_request, output_limit=C.output_limit,
            api_key=registry.request_key, session_id=self.id,
        )
        self.observers = Observers()
        # MCP servers the client asked this session to use (kept for when MCP is wired in)
        self.mcp_servers: list[dict[str, Any]] = []
        self.recorder = SessionRecorder(store)  # called by _emit: written before anyone is told
        self.subscribe = self.observers.subscribe
        self._write_error: SessionWriteError | None = None  # the failed write that stopped this run
        self._retry_attempt = 0
        self._retry_next = False
        self._overflow_retried = False
        self._compaction_cancel: CancelToken | None = None
        self.compacting = False  # between compaction_start and compaction_end
        self.compaction_said: str | None = None  # why the last compaction did not happen
        # Over the threshold and compacting could not help: the context size at which a
        # compaction left it over (said then; no threshold compaction again until it has
        # grown by a kept tail), and whether "nothing to compact" was said.
        self._over_threshold_at: int | None = None
        self._nothing_said = False
        self.navigation: CancelToken | None = None  # a navigation summarising the branch it leaves
        self._stop = asyncio.Event()  # abort requested: ends a retry wait too
        self._settle_task: asyncio.Task[None] | None = None
        self._delivered: dict[int, asyncio.Future[None]] = {}
        self._bash_cancel: CancelToken | None = None
        self._bash_untimed = False
        self.input_closed = False  # the client can send nothing more (stdin EOF)
        self._pending_bash: list[BashExecutionMessage] = []
        self.changes: Any = None  # the change log (:mod:`.changes`), set by the session manager
        self.files: Any = None  # how the tools reach files; reverts go the same way
        self.view: Any = None  # the tools' view of the workspace (:class:`..tools.workspace.Workspace`)
        self.mode = modes.DEFAULT_MODE
        self.plan = PlanState(store)
        self.agent.subscribe(self._on_agent_event)

    # --- runs --------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A run is active, or it ended and the session is still settling it, or it is navigating."""
        return (self._settle_task is not None and not self._settle_task.done()) or self.navigation is not None

    async def _emit(self, event: Any) -> None:
        """Write the event's fact to the file, then tell the observers; an unwritten fact is not told."""
        try:
            self.recorder(event)
        except SessionWriteError as exc:
            await self._write_failed(exc)
            if not isinstance(event, AgentSettled):  # a run always settles
                raise
        if isinstance(event, CompactionEnd):
            self.compaction_said = event.error_message or ("aborted" if event.aborted else None)
        await self.observers.emit(event)

    async def emit(self, event: Any) -> None:
        """Record and announce an event of something working inside a run (a subagent)."""
        await self._emit(event)

    async def _write_failed(self, exc: SessionWriteError) -> None:
        """A write failed: say so, and stop the run (nothing more of it could be kept)."""
        self.agent.state.error = str(exc)
        if self.busy:
            if self._write_error is not None:
                return  # this run already stopped for it
            self._write_error = exc
            self._stop.set()
            self.agent.request_abort()
        log.error("session %s: %s", self.id, exc)
        await self.observers.emit(SessionWriteFailed(error=str(exc), errno=exc.errno_name, file=str(exc.path)))

    def check_writable(self) -> None:
        if self.store.read_only is not None:
            raise SessionReadOnly(self.store.read_only)

    def withhold_model(self, model_ref: tuple[str, str], reason: str) -> None:
        """Open with no model: the one it used is ``model_ref``, which may not be used (``reason``)."""
        self.model_withheld = (model_ref, reason)

    def check_model(self) -> Model:
        if self.model is None and self.model_withheld is not None:
            (provider, _), reason = self.model_withheld
            raise SessionError("model", f"no model: this session's {reason}; or choose another (setModel)",
                               {"reason": "untrustedWorkspace", "provider": provider})
        if self.model is None:
            how = picker.choose_model("pass --model provider/id or call setModel")
            raise SessionError("model", f"no model is selected: {how}",
                               {"reason": "noModel"})
        try:
            return self.registry.usable(self.model)
        except ModelUnavailable as exc:
            raise SessionError("model", str(exc), exc.data) from None

    async def prompt(self, text: str, images: Sequence[ImageContent] | None = None,
                     streaming_behavior: str | None = None,
                     command: SlashCommandUse | None = None) -> tuple[str, str | None]:
        """Returns ``(disposition, queue_id)`` once the input is accepted and on disk.
        ``command``: the slash command ``text`` was expanded from (kept in the message)."""
        self.check_writable()
        if self.busy:
            if streaming_behavior in ("steer", "followUp"):
                return "queued", await self.enqueue(streaming_behavior, text, images, command)
            raise SessionError("busy", "a run is active: send prompt with streamingBehavior 'steer' or "
                                       "'followUp', or use steer / followUp, or abort first")
        self.check_model()
        message = make_user_message(text, images)
        message.command = command
        delivered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._delivered[id(message)] = delivered
        self._accept(self.agent.prompt(message))
        try:
            await delivered  # on disk (or the run ended before it got that far)
        except SessionWriteError as exc:
            raise exc.context("the prompt was not saved, so it was not sent to the model") from None
        self.store.sync()
        return "started", None

    async def enqueue(self, kind: str, text: str, images: Sequence[ImageContent] | None = None,
                      command: SlashCommandUse | None = None) -> str:
        self.check_writable()
        self._check_queue_room(text, images)
        message = make_user_message(text, images)
        message.command = command
        queue_id = new_queue_id()
        self.recorder.queued(kind, message, queue_id)
        target = self.agent.steer if kind == "steer" else self.agent.follow_up
        await target(message, queue_id=queue_id)
        return queue_id

    def _check_queue_room(self, text: str, images: Sequence[ImageContent] | None) -> None:
        """The queue is bounded (each ``queue_update`` carries all of it): refused, not dropped."""
        queued = [*self.agent.steering, *self.agent.follow_ups]
        size = len(text.encode("utf-8", "surrogatepass")) + sum(len(i.data) for i in images or ())
        if len(queued) >= MAX_QUEUED:
            raise SessionError("state", f"the queue already holds {MAX_QUEUED} messages, its limit: wait for the "
                                        "agent to take some, or remove some (removeQueued, clearQueue)")
        held = sum(_queued_size(q.message) for q in queued)
        if held + size > MAX_QUEUED_BYTES:
            raise SessionError("state", f"the queued messages would hold {held + size} bytes, more than their limit "
                                        f"of {MAX_QUEUED_BYTES >> 10} KiB: wait for the agent to take some, or send "
                                        "this one when the run is over")

    async def continue_(self) -> None:
        if self.busy:
            raise SessionError("busy", "a run is active; continue needs an idle session")
        self.check_writable()
        self.check_model()
        try:
            self._accept(self.agent.continue_())
        except AgentBusy as exc:
            raise SessionError("busy", str(exc)) from None
        except AgentError as exc:
            raise SessionError("state", str(exc)) from None

    def _accept(self, run: asyncio.Task[None]) -> asyncio.Task[None]:
        self._stop.clear()
        self._write_error = None
        self._retry_attempt = 0
        self._overflow_retried = False
        self._settle_task = asyncio.ensure_future(self._settle(run))
        return self._settle_task

    async def _on_agent_event(self, event: Any) -> None:
        if type(event) is MessageUpdate:  # the stream's hot path: news, nothing to write
            await self.observers.emit(event)
            return
        if self._write_error is not None and isinstance(event, MessageEnd):
            return  # the rest of a run stopped by a failed write is not kept, so not announced as final
        if isinstance(event, AgentEnd):
            self._retry_next = self._should_retry()
            event.will_retry = self._retry_next or self._should_recover_overflow()
        try:
            await self._emit(event)
        except SessionWriteError as exc:  # reported, and the run is stopping
            waiter = self._delivered.pop(id(event.message), None) if isinstance(event, MessageEnd) else None
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
            return
        if isinstance(event, MessageEnd) and is_plan_result(event.message):  # on disk: the branch's plan now
            await self.observers.emit(self.plan.event())
        if self.changes is not None:
            try:
                if isinstance(event, AgentStart):  # the run begins recording after a revert being written
                    async with self.changes.reverting:
                        await self.changes.on_event(event, self._emit)
                else:
                    await self.changes.on_event(event, self._emit)
            except SessionWriteError:
                return  # reported, and the run is stopping
        if isinstance(event, ToolExecutionEnd) and isinstance(event.result.details, dict) \
                and event.result.details.get("introduced"):  # a write or edit broke something
            details = event.result.details
            await self._emit(Diagnostics(tool_call_id=event.tool_call_id, path=str(details.get("path", "")),
                                         introduced=[IntroducedDiagnostic(**d) for d in details["introduced"]]))
        if isinstance(event, MessageEnd):
            if self._retry_attempt and _answered(event.message):
                await self._retry_recovered()
            waiter = self._delivered.pop(id(event.message), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
                # The run waits here while the prompt's reply goes out: one turn of the loop
                # for the handler to return, one for the reply to be sent.
                await asyncio.sleep(0)
                await asyncio.sleep(0)

    async def _retry_recovered(self) -> None:
        """A retried request was answered: the next failure, however late in a long tool
        loop, starts again from the first attempt and the shortest wait."""
        attempt, self._retry_attempt = self._retry_attempt, 0
        await self._emit(AutoRetryEnd(success=True, attempt=attempt))

    def _last_message(self) -> Any:
        messages = self.agent.state.messages
        return messages[-1] if messages else None

    def _should_retry(self) -> bool:
        return (self.retry.enabled and not self._stop.is_set() and not self.agent.last_run_aborted
                and self._retry_attempt < self.retry.max_attempts and is_retryable(self._last_message()))

    def _should_recover_overflow(self) -> bool:
        last = self._last_message()
        return (not self._overflow_retried and not self._stop.is_set() and self.model is not None
                and getattr(last, "stop_reason", None) == "error" and is_context_overflow(last))

    def _retry_delay_ms(self) -> int:
        detail: ProviderErrorDetail | None = getattr(self._last_message(), "error_detail", None)
        if detail is not None and detail.retry_after_s is not None:
            return int(min(detail.retry_after_s * 1000, self.retry.max_delay_ms))
        backoff: int = self.retry.base_delay_ms * 2 ** (self._retry_attempt - 1)  # attempts count from 1
        return min(backoff, self.retry.max_delay_ms)

    async def _settle(self, run: asyncio.Task[None]) -> None:
        while True:
            try:
                await run
            except Exception:  # noqa: BLE001 - logged by the agent; the run still settles
                pass
            if self._stop.is_set():
                break
            if self._should_recover_overflow():
                self._overflow_retried = True
                if not await self.compact(reason="overflow"):
                    break
            elif self._retry_next:
                self._retry_next = False
                if not await self._wait_to_retry():
                    break
            else:
                break
            run = self.agent.continue_()
        for message in self._pending_bash:  # user commands that finished during the run
            try:
                await self._add_message(message)
            except SessionWriteError:
                pass  # reported; the conversation stays as the file holds it
        self._pending_bash.clear()
        for waiter in self._delivered.values():  # a prompt that never got delivered
            if not waiter.done():
                waiter.set_result(None)
        self._delivered.clear()
        aborted = self.agent.last_run_aborted or self._stop.is_set()
        if self._write_error is not None:  # what could not be written is not part of the conversation
            self.agent.state.messages = context_messages(self.store)
            self.agent.state.error = str(self._write_error)
        if self._retry_attempt:
            last = self._last_message()
            success = getattr(last, "stop_reason", None) not in ("error", "aborted") and not aborted
            await self._emit(AutoRetryEnd(
                success=success, attempt=self._retry_attempt,
                final_error=None if success else ("aborted" if aborted else getattr(last, "error_message", None)),
            ))
        if self.changes is not None:
            self.changes.finish()
        log.info("session %s settled%s", self.id, " (aborted)" if aborted else "")
        await self._emit(AgentSettled(aborted=aborted, stop_reason=None if aborted else self.agent.state.stop_reason))

    async def _wait_to_retry(self) -> bool:
        self._retry_attempt += 1
        delay = self._retry_delay_ms()
        await self._emit(AutoRetryStart(attempt=self._retry_attempt, max_attempts=self.retry.max_attempts,
                                        delay_ms=delay, error_message=self._last_message().error_message or ""))
        try:
            await asyncio.wait_for(self._stop.wait(), delay / 1000)
        except asyncio.TimeoutError:
            pass
        return not self._stop.is_set()

    async def abort(self) -> bool:
        """Stop the current run (retry wait, compaction), or a compaction the user asked for outside
        a run; returns once settled. False when idle."""
        if not self.busy:
            if self._compaction_cancel is None:
                return False
            self._compaction_cancel.cancel()  # its compact request ends aborted
            return True
        if self.navigation is not None:
            self.navigation.cancel()
            return True
        self._stop.set()
        if self._compaction_cancel is not None:
            self._compaction_cancel.cancel()
        await self.agent.abort()
        if self._settle_task is not None:
            await asyncio.shield(self._settle_task)
        return True

    async def stop(self) -> tuple[bool, list[str], list[str]]:
        """The user's stop: :meth:`abort`, then the queued messages are taken back (steering,
        follow-ups, in queue order) so nothing they had queued fires later."""
        aborted = await self.abort()
        steering, follow_up = await self.clear_queue()
        return aborted, steering, follow_up

    async def wait_settled(self) -> None:
        if self._settle_task is not None:
            await asyncio.shield(self._settle_task)

    async def clear_queue(self) -> tuple[list[str], list[str]]:
        steering, follow_ups = await self.agent.clear_queues()
        self.recorder.cleared([q.id for q in steering + follow_ups])
        return [q.text for q in steering], [q.text for q in follow_ups]

    async def remove_queued(self, queue_id: str) -> bool:
        item = await self.agent.remove_queued(queue_id)
        if item is not None:
            self.recorder.cleared([queue_id])
        return item is not None

    # --- compaction ---------------------------------------------------------------------

    async def _before_request(self, messages: list[Any], cancel: CancelToken) -> list[Any]:
        """Before every model request: compact when the context crossed the threshold, unless
        compacting already could not bring it under and it has not grown much since."""
        model = self.model
        if model is None or not self.compaction.enabled:
            return messages
        overhead = self._overhead()
        limit = C.threshold(model, self.compaction, overhead)
        tokens = C.context_tokens(messages, overhead)
        if tokens <= limit:
            self._over_threshold_at, self._nothing_said = None, False
            return messages
        keep = C.keep_recent_tokens(model, self.compaction, overhead)
        grown = max(keep, C.summary_tokens(model, self.compaction, overhead))  # enough to summarise
        if self._over_threshold_at is not None and tokens < self._over_threshold_at + grown:
            return messages  # compacting did not bring it under (said then), and it has not grown enough since
        cramped = model.context_window - overhead < C.MIN_ROOM
        if cramped or C.plan(self.store, keep) is None:
            if not self._nothing_said:  # said once, not at every request
                self._nothing_said = True
                await self._emit(CompactionStart(reason="threshold"))
                await self._emit(CompactionEnd(reason="threshold", error_message=self._cannot_compact(
                    model, overhead, sum(map(C.estimate_tokens, messages)), cramped)))
            return messages
        if await self.compact(reason="threshold", cancel=cancel):
            messages = list(self.agent.state.messages)
        if not cancel.cancelled and C.context_tokens(messages, overhead) > limit:
            self._over_threshold_at = C.context_tokens(messages, overhead)
        return messages

    async def compact(self, instructions: str | None = None, reason: str = "manual",
                      cancel: CancelToken | None = None) -> CompactionOutcome | None:
        """Summarise the older context; the compaction's result, or None when it failed or
        would not have made the context smaller."""
        self.check_writable()
        model = self.check_model()
        overhead = self._overhead()
        plan = C.plan(self.store, C.keep_recent_tokens(model, self.compaction, overhead))
        if plan is None and reason in ("manual", "overflow"):  # it must shrink: keep only the newest turn
            plan = C.plan(self.store, 0)
        self.compacting = True
        try:
            return await self._compact(plan, instructions, reason, model, cancel, overhead)
        finally:
            self.compacting = False

    async def _compact(self, plan: C.Plan | None, instructions: str | None, reason: str, model: Model,
                       cancel: CancelToken | None, overhead: int) -> CompactionOutcome | None:
        await self._emit(CompactionStart(reason=reason))
        if plan is None:
            await self._emit(CompactionEnd(reason=reason, error_message="nothing to compact: the context is already small"))
            return None
        cancel = cancel or CancelToken()
        self._compaction_cancel = cancel
        try:
            summary, usage, details = await C.summarize(model, await self.agent.resolve_api_key(model), plan, instructions,
                                                        cancel, C.summary_tokens(model, self.compaction, overhead))
        except C.CompactionError as exc:
            aborted = str(exc) == "aborted"
            await self._emit(CompactionEnd(reason=reason, aborted=aborted, error_message=None if aborted else str(exc)))
            return None
        finally:
            self._compaction_cancel = None
        refused = C.refusal(plan, summary)
        if refused is not None:
            await self._emit(CompactionEnd(reason=reason, error_message=refused))
            return None
        try:
            entry = self.store.append("compaction", summary=summary, firstKeptEntryId=plan.first_kept_id,
                                      tokensBefore=plan.tokens_before, details=details, usage=to_wire(usage))
            self.store.sync()
        except SessionWriteError as exc:
            await self._write_failed(exc)
            await self._emit(CompactionEnd(reason=reason, error_message=str(exc)))
            return None
        self.agent.state.messages = context_messages(self.store)
        result = CompactionOutcome(
            summary=summary, first_kept_entry_id=plan.first_kept_id, tokens_before=plan.tokens_before,
            estimated_tokens_after=sum(map(C.estimate_tokens, self.agent.state.messages)),
            details=from_wire(details, CompactionDetails) if details else None, entry_id=entry["id"])
        await self._emit(CompactionEnd(reason=reason, result=result, will_retry=reason == "overflow"))
        return result

    def _overhead(self) -> int:
        state = self.agent.state
        return C.overhead_tokens(state.system_prompt, [tool.spec() for tool in state.tools])

    def _cannot_compact(self, model: Model, overhead: int, tokens: int, cramped: bool) -> str:
        window = model.context_window
        if cramped:
            return (f"cannot compact: the system prompt and the tools' schemas take about {overhead} tokens of the "
                    f"model's {window}-token window, which leaves too little for the conversation; a model with a "
                    "larger context window (or fewer tools) is needed")
        return (f"nothing to compact: the newest messages (about {tokens} tokens) are kept whole, and with the system "
                f"prompt and the tools' schemas (about {overhead} tokens) they are over the compaction threshold of "
                f"{C.threshold(model, self.compaction, overhead)} tokens in the model's {window}-token window; "
                "compacted when the conversation has grown")

    # --- the user's shell ----------------------------------------------------------------

    async def run_bash(self, command: str, exclude_from_context: bool, request_id: Any,
                       timeout: float | None = None) -> BashExecutionMessage:
        """Run a command for the user; its output joins the context at the next prompt.

        Once the client's input is closed a command without a ``timeout`` is aborted (it
        could otherwise keep the daemon alive for ever); one with a timeout runs on to it.
        """
        self.check_writable()
        if self._bash_cancel is not None:
            raise SessionError("busy", "a user command is already running: abortBash it first")
        cancel = CancelToken()
        self._bash_cancel = cancel
        self._bash_untimed = timeout is None
        if self.input_closed and timeout is None:
            cancel.cancel("input closed")

        async def output(delta: str) -> None:
            await self._emit(BashExecutionUpdate(request_id=request_id, delta=delta))

        try:
            result = await run_shell(command, self.cwd, cancel=cancel, timeout=timeout, on_output=output,
                                     spill_dir=self.spill_dir)
        finally:
            self._bash_cancel = None
        message = BashExecutionMessage(command=command, output=result.output, exit_code=result.exit_code,
                                       cancelled=result.cancelled or result.timed_out, truncated=result.truncated,
                                       full_output_path=result.full_output_path,
                                       exclude_from_context=True if exclude_from_context else None)
        if self.busy:
            self._pending_bash.append(message)  # not in the middle of a run's turns
        else:
            await self._add_message(message)
        return message

    def abort_bash(self, untimed_only: bool = False) -> bool:
        if self._bash_cancel is None or (untimed_only and not self._bash_untimed):
            return False
        self._bash_cancel.cancel()
        return True

    def close_input(self) -> None:
        """The client's input is closed: stop a user command that has no timeout of its own."""
        self.input_closed = True
        self.abort_bash(untimed_only=True)

    async def _add_message(self, message: Any) -> None:
        self.agent.state.messages.append(message)
        try:
            await self._emit(MessageStart(message=message))
            await self._emit(MessageEnd(message=message))
        except SessionWriteError:
            self.agent.state.messages.remove(message)
            raise
        self.store.sync()

    # --- replay -------------------------------------------------------------------------

    def replay_events(self) -> Iterator[Replayed]:
        """The context's stored messages as message events marked as replayed, then ``replay_end``,
        as the file has them now (the branch and plan are taken at the call; each event is made
        as it is asked for, so a long conversation is never held twice); nothing is written, and
        the session's own state does not change."""
        entries = context_entries(self.store.branch())
        plan = self.plan.event() if self.plan.current.entries else None
        return self._replayed(entries, plan)

    def _replayed(self, entries: list[dict[str, Any]], plan: PlanUpdated | None) -> Iterator[Replayed]:
        count = 0
        for entry in entries:
            message, reason = branch_message(self.store, entry)
            if reason is not None:
                continue
            yield Replayed(MessageStart(message=message))
            yield Replayed(MessageEnd(message=message, entry_id=entry["id"]))
            count += 1
        if plan is not None:
            yield Replayed(plan)
        yield Replayed(ReplayEnd(message_count=count))

    # --- model state and settings ---------------------------------------------------------

    async def set_model(self, provider: str, model_id: str) -> Model:
        self.check_writable()
        try:
            model = self.registry.usable(self.registry.find(provider, model_id))
        except ModelUnavailable as exc:
            raise SessionError("model", str(exc), exc.data) from None
        await self._emit(ModelChanged(provider=model.provider, model_id=model.id))  # on disk first
        self.model = model
        self.model_withheld = None
        self.agent.state.model = model
        self.store.sync()
        return model

    async def set_thinking_level(self, level: str) -> str:
        if level not in THINKING_LEVELS:
            raise SessionError("state", f"unknown thinking level {level!r}")
        self.check_writable()
        if level != "off" and self.model is not None and not self.model.reasoning:
            level = "off"  # the model cannot think; say so through the result
        await self._emit(ThinkingLevelChanged(level=level))  # on disk first
        self.agent.state.thinking_level = level  # type: ignore[assignment]
        self.store.sync()
        return level

    async def set_mode(self, mode: str) -> str:
        """Change the session's mode (:mod:`..tools.modes`); kept in the file, applied from the next tool call."""
        if mode not in modes.MODES:
            raise SessionError("state", f"unknown mode {mode!r}: the modes are {', '.join(modes.MODES)}")
        self.check_writable()
        self._keep_settings(mode=mode)
        self.apply_mode(mode)
        await self._emit(ModeChanged(mode=mode))
        return mode

    def apply_mode(self, mode: str) -> None:
        self.mode = mode
        self.agent.state.system_prompt = modes.system_prompt(self.agent.state.system_prompt, mode)

    async def set_name(self, name: str | None) -> None:
        self.check_writable()
        await self._emit(SessionInfoChanged(name=name or None))  # on disk first
        self.name = name or None
        self.store.sync()

    def _keep_settings(self, **changed: Any) -> None:
        """Write a settings change to the file so a reload restores it (memory only when read-only)."""
        if self.store.read_only is None:
            self.store.append(kept_settings.ENTRY, **changed)
            self.store.sync()

    def set_queue_modes(self, steering: str | None, follow_up: str | None) -> None:
        self.agent.set_queue_modes(steering, follow_up)  # type: ignore[arg-type]
        self._keep_settings(queueModes={"steering": self.agent.steering.mode, "followUp": self.agent.follow_ups.mode})

    def set_auto_retry(self, enabled: bool | None, max_attempts: int | None, base_delay_ms: int | None) -> RetrySettings:
        changed: dict[str, Any] = {"enabled": enabled, "max_attempts": max_attempts, "base_delay_ms": base_delay_ms}
        self.retry = attrs.evolve(self.retry, **{k: v for k, v in changed.items() if v is not None})
        self._keep_settings(autoRetry=to_wire(self.retry))
        return self.retry

    def set_auto_compaction(self, enabled: bool | None, reserve_tokens: int | None,
                            keep_recent_tokens: int | None) -> C.CompactionSettings:
        changed: dict[str, Any] = {"enabled": enabled, "reserve_tokens": reserve_tokens,
                                   "keep_recent_tokens": keep_recent_tokens}
        self.compaction = attrs.evolve(self.compaction, **{k: v for k, v in changed.items() if v is not None})
        self._keep_settings(autoCompaction=to_wire(self.compaction))
        return self.compaction

    @property
    def messages(self) -> list[Any]:
        return self.agent.state.messages

    async def close(self) -> None:
        self.abort_bash()
        await self.abort()
        self.store.close()

