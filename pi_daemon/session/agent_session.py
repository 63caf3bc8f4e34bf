"""AgentSession: one conversation — an Agent plus its model state and run bookkeeping.

The session turns the agent's low-level runs into *accepted runs*: each ``prompt`` that
starts work, or ``continue``, ends with exactly one ``agent_settled`` once nothing will
happen by itself any more. Observers of the session see every agent event plus the
session's own (``agent_settled``, ``model_changed``, ``thinking_level_changed``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Sequence

from ..agent import Agent, AgentBusy, AgentError, convert_with_roles
from ..events import AgentSettled, ModelChanged, Observers, ThinkingLevelChanged
from ..llm.model import THINKING_LEVELS, Model
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..messages import ImageContent

log = logging.getLogger(__name__)


def new_session_id() -> str:
    return uuid.uuid4().hex[:16]


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
        self._settle_task: asyncio.Task | None = None
        self.agent.subscribe(self._emit)

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
        self._settle_task = asyncio.ensure_future(self._settle(run))

    async def _settle(self, run: asyncio.Task) -> None:
        try:
            await run
        except Exception:  # noqa: BLE001 - logged by the agent; the run still settles
            pass
        log.info("session %s settled%s", self.id, " (aborted)" if self.agent.last_run_aborted else "")
        await self._emit(AgentSettled(aborted=self.agent.last_run_aborted))

    async def abort(self) -> bool:
        """Stop the current run; returns once it has settled. False when idle."""
        if not self.busy:
            return False
        await self.agent.abort()
        if self._settle_task is not None:
            await asyncio.shield(self._settle_task)
        return True

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
