"""The agent loop as a function: driven with plain callbacks and a faux model, no Agent."""

from __future__ import annotations

from typing import Any

from pi_daemon.agent.context import default_convert_to_llm
from pi_daemon.agent.loop import LoopConfig, run_agent_loop
from pi_daemon.agent.queues import QueuedMessage
from pi_daemon.agent.state import AgentState
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.faux import FauxProvider, text_reply, tool_reply
from pi_daemon.llm.stream import stream
from pi_daemon.messages import UserMessage
from pi_daemon.tools import FunctionTool


def queued(text: str, kind: str = "steer") -> QueuedMessage:
    return QueuedMessage(kind=kind, message=UserMessage(content=text))  # type: ignore[arg-type]


class Callbacks:
    """Queues the loop takes from, and what it reports delivered and emitted."""

    def __init__(self, steering: list[list[QueuedMessage]] | None = None,
                 follow_ups: list[list[QueuedMessage]] | None = None) -> None:
        self.steering = steering or []
        self.follow_ups = follow_ups or []
        self.delivered: list[str] = []
        self.events: list[Any] = []
        self.keys: list[str] = []

    async def take_steering(self) -> list[QueuedMessage]:
        return self.steering.pop(0) if self.steering else []

    async def take_follow_up(self) -> list[QueuedMessage]:
        return self.follow_ups.pop(0) if self.follow_ups else []

    async def emit(self, event: Any) -> None:
        self.events.append(event)

    async def key(self, model: Any) -> str | None:
        self.keys.append(model.id)
        return "k"

    def config(self, **extra: Any) -> LoopConfig:
        return LoopConfig(stream_fn=stream, convert_to_llm=default_convert_to_llm, resolve_api_key=self.key,
                          take_steering=self.take_steering, take_follow_up=self.take_follow_up,
                          delivered=lambda item: self.delivered.append(item.text), **extra)

    def types(self) -> list[str]:
        return [e.type for e in self.events if e.type != "message_update"]


async def test_a_text_answer_appends_to_the_state_and_returns_what_the_run_added():
    faux = FauxProvider([text_reply("Hello")])
    state = AgentState(model=faux.model(), messages=[UserMessage(content="earlier")])
    calls = Callbacks()
    added = await run_agent_loop([UserMessage(content="hi")], state, calls.config(), calls.emit, CancelToken())
    assert [m.role for m in added] == ["user", "assistant"] and added[1].text() == "Hello"
    assert state.messages[1:] == added and state.messages[0].content == "earlier"
    assert calls.types() == ["agent_start", "turn_start", "message_start", "message_end", "message_start",
                             "message_end", "turn_end", "agent_end"]
    assert calls.keys == [faux.model().id]


async def test_steering_goes_in_after_the_tool_turn_and_a_follow_up_when_it_would_stop():
    ran: list[dict] = []

    async def note(args: dict, **_: Any) -> str:
        ran.append(args)
        return "noted"

    faux = FauxProvider([tool_reply(("note", {"n": 1})), text_reply("after steering"), text_reply("after follow-up")])
    state = AgentState(model=faux.model(), tools=[FunctionTool("note", "n", {"type": "object"}, note)])
    calls = Callbacks(steering=[[], [queued("turn left")]], follow_ups=[[queued("and then?", "followUp")]])
    added = await run_agent_loop([UserMessage(content="go")], state, calls.config(), calls.emit, CancelToken())
    assert ran == [{"n": 1}]
    assert [(m.role, getattr(m, "content", None) if m.role == "user" else None) for m in added] == [
        ("user", "go"), ("assistant", None), ("toolResult", None), ("user", "turn left"), ("assistant", None),
        ("user", "and then?"), ("assistant", None)]
    assert calls.delivered == ["turn left", "and then?"]
    assert added[-1].text() == "after follow-up"


async def test_a_hook_refuses_a_call_and_a_cancelled_run_ends_at_once():
    faux = FauxProvider([tool_reply(("note", {})), text_reply("done")])

    async def refuse(context: Any, cancel: CancelToken) -> str | None:
        return "not now"

    async def note(*_: Any, **__: Any) -> str:
        raise AssertionError("the refused tool ran")

    state = AgentState(model=faux.model(), tools=[FunctionTool("note", "n", {"type": "object"}, note)])
    calls = Callbacks()
    added = await run_agent_loop([UserMessage(content="go")], state, calls.config(before_tool_call=refuse),
                                 calls.emit, CancelToken())
    result = next(m for m in added if m.role == "toolResult")
    assert result.is_error and "not now" in result.content[0].text

    cancel = CancelToken()
    cancel.cancel("aborted")
    calls = Callbacks()
    added = await run_agent_loop([UserMessage(content="again")], state, calls.config(), calls.emit, cancel)
    assert calls.types()[-1] == "agent_end" and not [m for m in added if m.role == "assistant" and m.text()]
