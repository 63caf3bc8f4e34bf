"""The ACP face over an armed repository (:func:`helpers.armed_repo`): plan mode in an
untrusted workspace refuses the agent's bash, and the refused call runs nothing git obeys."""

from __future__ import annotations

import asyncio

from acp import text_block

from helpers import armed_repo
from sdk_client import agent, script


async def test_plan_mode_runs_nothing_of_the_repository(tmp_path):
    ws, fired = armed_repo(tmp_path)
    faux = script(tmp_path / "s.json", [
        {"content": [{"type": "toolCall", "id": "b1", "name": "bash", "arguments": {"command": "echo x >> a.txt"}}],
         "stopReason": "toolUse"},
        {"content": [{"type": "text", "text": "done"}]}])
    async with agent(ws, faux) as (conn, rec):
        session_id = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await conn.set_session_mode(session_id=session_id, mode_id="plan")
        reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=[text_block("go")]), 60)
        assert reply.stop_reason == "end_turn" and rec.permission_requests == []
    assert not fired.exists()
    assert (ws / "a.txt").read_text() == "one\n"
