"""pi_daemon.client against the real daemon: typed results, typed events, the protocol's errors."""

from __future__ import annotations

import asyncio
import json

import pytest

from client import clean_env
from pi_daemon.client import AsyncClient, Client
from pi_daemon.events import AgentSettled, MessageUpdate, TextDeltaEvent, ToolExecutionEnd
from pi_daemon.wire.errors import InvalidParams, SessionNotFoundError
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


def test_streamed_deltas_are_read_exactly_as_the_converter_reads_them():
    from pi_daemon.client import loads, structure_event
    from pi_daemon.converter import from_wire
    from pi_daemon.rpc.types import AgentEventParams

    frames = [
        '{"sessionId":"s","seq":7,"event":{"type":"message_update","assistantMessageEvent":'
        f'{{"type":"{kind}","contentIndex":1,"delta":"a\\u00e9\\n"}}}}}}'
        for kind in ("text_delta", "thinking_delta", "toolcall_delta")
    ] + [
        '{"sessionId":"s","seq":8,"replay":true,"event":{"type":"message_update","assistantMessageEvent":'
        '{"type":"text_delta","contentIndex":0,"delta":"x"}}}',
        '{"sessionId":"s","seq":9,"event":{"type":"message_update","assistantMessageEvent":'
        '{"type":"text_start","contentIndex":0}}}',
        '{"sessionId":"s","seq":10,"event":{"type":"agent_settled","runId":"r","aborted":false}}',
    ]
    for frame in frames:
        params = loads(frame.encode())
        assert structure_event(params) == from_wire(params, AgentEventParams), frame
    with pytest.raises(Exception):
        structure_event(loads(b'{"sessionId":"s","seq":"1","event":{"type":"message_update",'
                              b'"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"x"}}}'))
