"""pi_daemon.client against the real daemon: typed results, typed events, the protocol's errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from client import clean_env
from pi_daemon.client import AsyncClient, Client
from pi_daemon.events import AgentSettled, MessageUpdate, TextDeltaEvent, ToolExecutionEnd
from pi_daemon.rpc.errors import InvalidParams, SessionNotFoundError
from pi_daemon.rpc.types import PermissionRequestParams, PermissionRequestResult, PromptParams, SessionState


def answer(client_events) -> str:
    text = ""
    for params in client_events:
        event = params.event
        if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextDeltaEvent):
            text += event.assistant_message_event.delta
        if isinstance(event, AgentSettled):
            return text
    raise AssertionError("the events ended before agent_settled")


def test_blocking_client_types_results_events_and_errors(tmp_path):
    with Client("--model", "faux/echo", cwd=str(tmp_path), env=clean_env()) as pi:
        state = pi.request("getState")
        assert isinstance(state, SessionState) and state.is_streaming is False
        assert pi.request("prompt", PromptParams(text="hello")).disposition == "started"
        assert answer(pi.events(timeout=30)).startswith("You said: hello")
        with pytest.raises(InvalidParams, match=r"params\.text"):
            pi.request("prompt", {"text": 5})
        with pytest.raises(SessionNotFoundError):
            pi.request("getState", {"sessionId": "no-such-session"})
        assert pi.close() == 0


def test_blocking_client_answers_a_permission_request(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"modelId": "s", "replies": [
        {"content": [{"type": "toolCall", "id": "c1", "name": "write",
                      "arguments": {"path": "a.txt", "content": "hi\n"}}], "stopReason": "toolUse"},
        {"content": [{"type": "text", "text": "done"}]}]}))
    asked: list[PermissionRequestParams] = []

    def allow(params: PermissionRequestParams) -> PermissionRequestResult:
        asked.append(params)
        return PermissionRequestResult(outcome="allow_once")

    with Client("--faux-script", str(script), "--model", "faux/s", cwd=str(tmp_path), env=clean_env(),
                handlers={"permission/request": allow}) as pi:
        pi.request("initialize", {"protocolVersion": 1, "capabilities": {"permissions": True}})
        pi.request("prompt", {"text": "write it"})
        ends = []
        for params in pi.events(timeout=30):
            if isinstance(params.event, ToolExecutionEnd):
                ends.append(params.event)
            if isinstance(params.event, AgentSettled):
                break
    assert [p.tool_name for p in asked] == ["write"] and asked[0].title
    assert ends[0].is_error is False and (tmp_path / "a.txt").read_text() == "hi\n"


def test_async_client(tmp_path):
    async def main() -> str:
        pi = await AsyncClient.start("--model", "faux/echo", cwd=str(tmp_path), env=clean_env())
        assert (await pi.request("prompt", {"text": "async hello"})).disposition == "started"
        text = ""
        async for params in pi.events():
            event = params.event
            if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextDeltaEvent):
                text += event.assistant_message_event.delta
            if isinstance(event, AgentSettled):
                break
        with pytest.raises(InvalidParams):
            await pi.request("setThinkingLevel", {"level": "enormous"})
        assert await pi.close() == 0
        return text

    assert asyncio.run(main()).startswith("You said: async hello")
