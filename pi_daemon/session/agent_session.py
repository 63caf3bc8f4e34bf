"""AgentSession: one conversation — an Agent plus its model state and run bookkeeping.

The session turns the agent's low-level runs into *accepted runs*: each ``prompt`` that
starts work, or ``continue``, ends with exactly one ``agent_settled`` once nothing will
happen by itself any more — after automatic retries of failed model requests (429, 5xx,
overloaded, dropped connections; exponential backoff or the provider's Retry-After).
Observers of the session see every agent event plus the session's own
(``agent_settled``, ``auto_retry_*``, ``model_changed``, ``thinking_level_changed``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Sequence

import attrs

from ..agent import Agent, AgentBusy, AgentError, convert_with_roles
from ..events import (
    AgentEnd,
    AgentSettled,
    AutoRetryEnd,
    AutoRetryStart,
    ModelChanged,
    Observers,
    ThinkingLevelChanged,
)
from ..llm.errors import is_retryable
from ..llm.model import THINKING_LEVELS, Model
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..messages import ImageContent

log = logging.getLogger(__name__)


def new_session_id() -> str:
    return uuid.uuid4().hex[:16]


@attrs.define
class RetrySettings:
    enabled: bool = True
    max_attempts: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60_000


class SessionError(Exception):
    """A request the session refuses; ``kind`` is busy / state / model."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class AgentSession:
    def __init__(
        self,
        registry: ModelRegistry,
        *,
        cwd: str,
        model: Model | None,
        session_id: str | None = None,
        name: str | None = None,
        system_prompt: str = "",
        tools: Sequence[Any] = (),
    ) -> None:
        self.id = session_id or new_session_id()
        self.cwd = cwd
        self.name = name
        self.file: str | None = None
        self.registry = registry
        self.model = model
        self.agent = Agent(
            model,  # type: ignore[arg-type]  # None until a model is chosen; checked at prompt
            system_prompt=system_prompt,
            tools=tools,
            convert_to_llm=convert_with_roles,
            api_key=registry.api_key,
            session_id=self.id,
        )
        self.observers = Observers()
        self.subscribe = self.observers.subscribe
        self._emit = self.observers.emit
        self.retry = RetrySettings()
        self._retry_attempt = 0
        self._retry_next = False
        self._stop = asyncio.Event()  # abort requested: ends a retry wait too
        self._settle_task: asyncio.Task | None = None
        self.agent.subscribe(self._on_agent_event)

    # --- runs --------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """A run is active, or it ended and the session is still settling it."""
        return self._settle_task is not None and not self._settle_task.done()

    def _check_model(self) -> Model:
        if self.model is None:
            raise SessionError(
                "model", "no model is selected: pass --model provider/id or call setModel"
            )
        try:
            return self.registry.usable(self.model)
        except ModelUnavailable as exc:
            raise SessionError("model", str(exc)) from None

    async def prompt(
        self, text: str, images: Sequence[ImageContent] | None = None,
        streaming_behavior: str | None = None,
    ) -> tuple[str, str | None]:
        """Returns ``(disposition, queue_id)`` as soon as the input is accepted."""
        if self.busy:
            if streaming_behavior == "steer":
                return "queued", (await self.agent.steer(text, images)).id
            if streaming_behavior == "followUp":
                return "queued", (await self.agent.follow_up(text, images)).id
            raise SessionError(
                "busy",
                "a run is active: send prompt with streamingBehavior 'steer' or 'followUp', "
                "or use steer / followUp, or abort first",
            )
        self._check_model()
        self._accept(self.agent.prompt(text, images))
        return "started", None

    async def steer(self, text: str, images: Sequence[ImageContent] | None = None) -> str:
        return (await self.agent.steer(text, images)).id

    async def follow_up(self, text: str, images: Sequence[ImageContent] | None = None) -> str:
        return (await self.agent.follow_up(text, images)).id

    async def continue_(self) -> None:
        if self.busy:
            raise SessionError("busy", "a run is active; continue needs an idle session")
        self._check_model()
        try:
            self._accept(self.agent.continue_())
        except AgentBusy as exc:
            raise SessionError("busy", str(exc)) from None
        except AgentError as exc:
            raise SessionError("state", str(exc)) from None

    def _accept(self, run: asyncio.Task) -> None:
        self._stop.clear()
        self._retry_attempt = 0
        self._settle_task = asyncio.ensure_future(self._settle(run))

    async def _on_agent_event(self, event: Any) -> None:
        if isinstance(event, AgentEnd):
            self._retry_next = self._should_retry()
            event.will_retry = self._retry_next
        await self._emit(event)

    def _last_message(self) -> Any:
        messages = self.agent.state.messages
        return messages[-1] if messages else None

    def _should_retry(self) -> bool:
        last = self._last_message()
        return (self.retry.enabled and not self._stop.is_set() and not self.agent.last_run_aborted
                and self._retry_attempt < self.retry.max_attempts and is_retryable(last))

    def _retry_delay_ms(self) -> int:
        detail = getattr(self._last_message(), "error_detail", None)
        if detail is not None and detail.retry_after_s is not None:
            return int(min(detail.retry_after_s * 1000, self.retry.max_delay_ms))
        return min(self.retry.base_delay_ms * 2 ** (self._retry_attempt - 1), self.retry.max_delay_ms)

    async def _settle(self, run: asyncio.Task) -> None:
        while True:
            try:
                await run
            except Exception:  # noqa: BLE001 - logged by the agent; the run still settles
                pass
            if not (self._retry_next and not self._stop.is_set()):
                break
            self._retry_next = False
            self._retry_attempt += 1
            failed = self._last_message()
            delay = self._retry_delay_ms()
            await self._emit(AutoRetryStart(attempt=self._retry_attempt, max_attempts=self.retry.max_attempts,
                                            delay_ms=delay, error_message=failed.error_message or ""))
            try:
                await asyncio.wait_for(self._stop.wait(), delay / 1000)
            except asyncio.TimeoutError:
                pass
            if self._stop.is_set():
                break
            run = self.agent.continue_()
        aborted = self.agent.last_run_aborted or self._stop.is_set()
        if self._retry_attempt:
            last = self._last_message()
            success = getattr(last, "stop_reason", None) not in ("error", "aborted") and not aborted
            await self._emit(AutoRetryEnd(
                success=success, attempt=self._retry_attempt,
                final_error=None if success else ("aborted" if aborted else getattr(last, "error_message", None)),
            ))
        log.info("session %s settled%s", self.id, " (aborted)" if aborted else "")
        await self._emit(AgentSettled(aborted=aborted))

    async def abort(self) -> bool:
        """Stop the current run (or retry wait); returns once it has settled. False when idle."""
        if not self.busy:
            return False
        self._stop.set()
        await self.agent.abort()
        if self._settle_task is not None:
            await asyncio.shield(self._settle_task)
        return True

    def set_auto_retry(self, enabled: bool | None, max_attempts: int | None, base_delay_ms: int | None) -> RetrySettings:
        if enabled is not None:
            self.retry.enabled = enabled
        if max_attempts is not None:
            self.retry.max_attempts = max_attempts
        if base_delay_ms is not None:
            self.retry.base_delay_ms = base_delay_ms
        return self.retry

    async def wait_settled(self) -> None:
        if self._settle_task is not None:
            await asyncio.shield(self._settle_task)

    async def clear_queue(self) -> tuple[list[str], list[str]]:
        steering, follow_ups = await self.agent.clear_queues()
        return [q.text for q in steering], [q.text for q in follow_ups]

    # --- model state -------------------------------------------------------------------

    async def set_model(self, provider: str, model_id: str) -> Model:
        try:
            model = self.registry.usable(self.registry.find(provider, model_id))
        except ModelUnavailable as exc:
            raise SessionError("model", str(exc)) from None
        self.model = model
        self.agent.state.model = model
        await self._emit(ModelChanged(provider=model.provider, model_id=model.id))
        return model

    async def set_thinking_level(self, level: str) -> str:
        if level not in THINKING_LEVELS:
            raise SessionError("state", f"unknown thinking level {level!r}")
        if level != "off" and self.model is not None and not self.model.reasoning:
            level = "off"  # the model cannot think; say so through the result
        self.agent.state.thinking_level = level  # type: ignore[assignment]
        await self._emit(ThinkingLevelChanged(level=level))
        return level

    def set_queue_modes(self, steering: str | None, follow_up: str | None) -> None:
        self.agent.set_queue_modes(steering, follow_up)  # type: ignore[arg-type]

    @property
    def messages(self) -> list[Any]:
        return self.agent.state.messages
