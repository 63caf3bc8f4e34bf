"""The ACP face's session/list and session/load over hostile files in ``.pi/sessions``: the
same bounded, no-follow reader as the native face. ACP's SessionInfo has no place for why a
file is damaged, so those are left out of its list (the native list names them)."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from acp import text_block

from sdk_client import agent


async def test_list_and_load_survive_devices_fifos_and_deep_nesting(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    async with agent(ws) as (conn, rec):
        good = (await conn.new_session(cwd=str(ws), mcp_servers=[])).session_id
        await asyncio.wait_for(conn.prompt(session_id=good, prompt=[text_block("first")]), 30)
    sessions = ws / ".pi" / "sessions"
    os.symlink("/dev/zero", sessions / "2020-01-01T00-00-00-000000Z_zero.jsonl")
    os.symlink("/proc/self/fd/2", sessions / "2020-01-01T00-00-00-000000Z_stderr.jsonl")
    os.mkfifo(sessions / "2020-01-01T00-00-00-000000Z_fifo.jsonl")
    header = json.dumps({"type": "session", "version": 3, "id": "deep", "timestamp": "2020-01-01T00:00:00.000Z",
                         "cwd": str(ws)}).encode()
    (sessions / "2020-01-01T00-00-00-000000Z_deep.jsonl").write_bytes(
        header + b'\n{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":'
        + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}}\n")
    async with agent(ws) as (conn, rec):
        listed = await asyncio.wait_for(conn.list_sessions(), 8)
        found = {s.session_id: s.model_dump(by_alias=True) for s in listed.sessions}
        assert found[good]["title"] == "first" and "deep" in found
        assert not {"zero", "stderr", "fifo"} & set(found)
        with pytest.raises(Exception) as refused:
            await asyncio.wait_for(conn.load_session(cwd=str(ws), session_id="fifo", mcp_servers=[]), 8)
        assert "not a regular file" in str(refused.value)
        again = await asyncio.wait_for(conn.list_sessions(), 8)
        assert good in {s.session_id for s in again.sessions}
