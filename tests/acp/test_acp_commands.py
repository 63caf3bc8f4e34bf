"""Slash commands in ACP: the host's templates, skills and built-ins, as an ACP client sees them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import RequestError, text_block

from sdk_client import agent, script


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def names(update: dict) -> list[str]:
    return [c["name"] for c in update["availableCommands"]]


async def wait_for(condition, what: str, timeout: float = 15.0) -> None:
    end = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < end, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_templates_skills_and_builtins_are_offered_and_run(tmp_path):
    ws = tmp_path / "ws"
    write(ws / ".pi" / "prompts" / "explain.md",
          "---\ndescription: Explain a topic\nargument-hint: \"<topic> <words>\"\n---\nExplain $1 in $2 words.\n")
    write(ws / ".pi" / "skills" / "tidy" / "SKILL.md",
          "---\nname: tidy\ndescription: Tidy the imports\n---\nSort the imports, then remove unused ones.\n")
    faux = script(tmp_path / "s.json", [{"echo": True}, {"echo": True}])
    async with agent(ws, faux) as (conn, rec):
        sid = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await wait_for(lambda: rec.of("available_commands_update"), "available_commands_update")
        offered = rec.of("available_commands_update")[0]
        assert {"compact", "new", "model", "thinking", "export", "explain", "skill:tidy"} <= set(names(offered))
        explain = next(c for c in offered["availableCommands"] if c["name"] == "explain")
        assert explain["description"] == "Explain a topic" and explain["input"]["hint"] == "<topic> <words>"

        reply = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("/explain closures 50")]), 30)
        assert reply.stop_reason == "end_turn"
        assert "Explain closures in 50 words." in rec.text()  # the echo model saw the expansion

        reply = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("/skill:tidy now")]), 30)
        assert "Sort the imports, then remove unused ones." in rec.text()

        before = len(rec.of("agent_message_chunk"))
        reply = await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("/thinking high")]), 30)
        assert reply.stop_reason == "end_turn"
        assert rec.of("agent_message_chunk")[before]["content"]["text"] == "The thinking level is now high."

        with pytest.raises(RequestError) as unknown:
            await asyncio.wait_for(conn.prompt(session_id=sid, prompt=[text_block("/nosuch")]), 30)
        assert unknown.value.code == -32010 and "nosuch" in str(unknown.value)

        # A template added while the session is open is offered at once.
        seen = len(rec.of("available_commands_update"))
        write(ws / ".pi" / "prompts" / "summarize.md", "Summarize $ARGUMENTS.\n")
        await wait_for(lambda: any("summarize" in names(u) for u in rec.of("available_commands_update")[seen:]),
                       "a commands update naming summarize")
    lines = next((ws / ".pi" / "sessions").glob(f"*_{sid}.jsonl")).read_text().splitlines()
    users = [m["message"] for m in map(json.loads, lines) if m.get("message", {}).get("role") == "user"]
    assert users[0]["command"] == {"name": "explain", "source": "template", "input": "/explain closures 50"}
