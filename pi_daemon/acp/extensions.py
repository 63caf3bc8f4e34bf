"""``_pi/...`` extension methods: what the native protocol can do and ACP has no word for.

ACP reserves method names starting with ``_`` for extensions; clients that do not know
them never send them. Each takes ``sessionId`` and answers like its native counterpart.
"""

from __future__ import annotations

from typing import Any

from ..converter import to_wire
from ..host.commands import command_record, parse_input
from ..session.navigation import tree
from ..session.rewind import rewind
from ..wire.errors import invalid_params
from .agent import AcpAgent


def _text(params: dict[str, Any]) -> str:
    text = params.get("text")
    if not isinstance(text, str) or not text:
        raise invalid_params("params.text", "expected a non-empty string")
    return text


def methods(agent: AcpAgent) -> dict[str, Any]:
    async def enqueue(kind: str, params: dict[str, Any]) -> dict[str, Any]:
        session = agent.get(params).session
        text = _text(params)
        typed = parse_input(agent.open_host, text)  # a template or skill is expanded, as in session/prompt
        if typed.kind == "builtin":
            raise invalid_params("params.text", f"/{typed.name} is a built-in command: it runs at once, "
                                 "it cannot be queued; send it with session/prompt")
        return {"queueId": await session.enqueue(kind, typed.text, None, command_record(typed, text))}

    async def steer(params: dict[str, Any]) -> dict[str, Any]:
        return await enqueue("steer", params)

    async def follow_up(params: dict[str, Any]) -> dict[str, Any]:
        return await enqueue("followUp", params)

    async def clear_queue(params: dict[str, Any]) -> dict[str, Any]:
        steering, follow_ups = await agent.get(params).session.clear_queue()
        return {"steering": steering, "followUp": follow_ups}

    async def compact(params: dict[str, Any]) -> dict[str, Any]:
        instructions = params.get("customInstructions")
        if instructions is not None and not isinstance(instructions, str):
            raise invalid_params("params.customInstructions", "expected a string")
        result = await agent.get(params).session.compact(instructions)
        return {"result": to_wire(result)}

    async def set_name(params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if name is not None and not isinstance(name, str):
            raise invalid_params("params.name", "expected a string or null")
        await agent.get(params).session.set_name(name)
        return {}

    async def get_state(params: dict[str, Any]) -> dict[str, Any]:
        tracked = agent.get(params)
        session = tracked.session
        return {"sessionId": session.id, "sessionFile": session.file, "name": session.name,
                "model": session.model.spec if session.model else None,
                "thinkingLevel": session.agent.state.thinking_level, "isStreaming": session.busy,
                "mode": session.mode, "messageCount": len(session.messages),
                "pendingMessageCount": len(session.agent.steering) + len(session.agent.follow_ups),
                "mcpServers": session.mcp_servers,
                "mcpStates": [{"name": st.name, "state": st.state, "tools": st.tools, "error": st.error}
                              for st in agent.open_host.mcp.states(session.id)]}

    async def rewind_to(params: dict[str, Any]) -> dict[str, Any]:
        session = agent.get(params).session
        entry_id, files, dry_run = params.get("entryId"), params.get("files", "revert"), params.get("dryRun", False)
        if entry_id is not None and not isinstance(entry_id, str):
            raise invalid_params("params.entryId", "expected the id of an entry of the session, or null")
        if files not in ("revert", "keep"):
            raise invalid_params("params.files", 'expected "revert" or "keep"')
        if not isinstance(dry_run, bool):
            raise invalid_params("params.dryRun", "expected true or false")
        return await rewind(session, entry_id, files, dry_run)

    async def session_tree(params: dict[str, Any]) -> dict[str, Any]:
        return tree(agent.get(params).session.store)

    return {"_pi/steer": steer, "_pi/followUp": follow_up, "_pi/clearQueue": clear_queue, "_pi/compact": compact,
            "_pi/setName": set_name, "_pi/getState": get_state, "_pi/session/rewind": rewind_to,
            "_pi/session/tree": session_tree}
