"""An ACP client built on the official Python SDK (the Python package ``agent-client-protocol``) that
starts the real ``pi-daemon --acp`` as a subprocess and records what it hears."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sys
from pathlib import Path
from typing import Any, AsyncIterator

from acp import PROTOCOL_VERSION
from acp.schema import (
    AllowedOutcome, ClientCapabilities, FileSystemCapabilities, ReadTextFileResponse,
    RequestPermissionResponse, WriteTextFileResponse,
)
from acp.stdio import spawn_agent_process

from client import clean_env


class Recorder:
    """The editor: records updates, answers permission and fs requests."""

    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.permission_requests: list[dict[str, Any]] = []
        self.answer: str | None = "allow_once"  # None: never answer (until cancelled)
        self.buffers: dict[str, str] = {}  # path -> unsaved editor text
        self.reads: list[str] = []
        self.windows: list[tuple[int | None, int | None]] = []  # (line, limit) of each read
        self.honours_windows = True  # False: answers every read with the whole file, as an older client
        self.extra_lines = 0  # a window answered with this many lines too many (avante: one)
        self.writes: list[tuple[str, str]] = []
        self.got_update = asyncio.Event()
        self.asked = asyncio.Event()
        self.timeline: list[tuple[str, str]] = []  # (what, tool call id): updates and permission requests in order

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append({"sessionId": session_id, **update.model_dump(by_alias=True, exclude_none=True)})
        last = self.updates[-1]
        if "toolCallId" in last:
            self.timeline.append((f"{last['sessionUpdate']}:{last.get('status', '')}", last["toolCallId"]))
        self.got_update.set()

    async def request_permission(self, options: Any, session_id: str, tool_call: Any, **kwargs: Any) -> Any:
        self.permission_requests.append({"options": [o.model_dump(by_alias=True) for o in options],
                                         "toolCall": tool_call.model_dump(by_alias=True, exclude_none=True)})
        self.timeline.append(("request_permission", tool_call.tool_call_id))
        self.asked.set()
        if self.answer is None:
            await asyncio.Event().wait()  # the user looks away; the agent must not hang on it
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.answer))

    async def read_text_file(self, path: str, session_id: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self.windows.append((line, limit))
        text = self.buffers[path] if path in self.buffers else Path(path).read_bytes().decode()
        if self.honours_windows and (line is not None or limit is not None):
            lines = re.findall(r"[^\n]*\n|[^\n]+$", text)  # an editor's lines, each with its line end
            start = (line or 1) - 1
            text = "".join(lines[start:None if limit is None else start + limit + self.extra_lines])
        return ReadTextFileResponse(content=text)

    async def write_text_file(self, content: str, path: str, session_id: str, **kwargs: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [u["update"] if "update" in u else u for u in self.updates if self._kind(u) == kind]

    @staticmethod
    def _kind(u: dict[str, Any]) -> str:
        return u.get("sessionUpdate") or u.get("session_update", "")

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"]["text"] for u in self.of(kind) if u["content"].get("type") == "text")


def script(path: Path, replies: list[dict], **options: Any) -> Path:
    path.write_text(json.dumps({"modelId": "acp", "replies": replies, **options}))
    return path


@contextlib.asynccontextmanager
async def agent(workspace: Path, faux: Path | None = None, *args: str, fs: bool = False, home: str | None = None,
                recorder: Recorder | None = None,
                started_in: Path | None = None) -> AsyncIterator[tuple[Any, Recorder]]:
    """``(connection, recorder)`` for a daemon serving ``workspace``, already initialized; the
    process starts in ``started_in`` (default: the workspace)."""
    recorder = recorder or Recorder()
    model = ["--faux-script", str(faux), "--model", "faux/acp"] if faux else ["--model", "faux/echo"]
    log = open(workspace.parent / f"{workspace.name}-stderr.log", "ab")
    async with spawn_agent_process(recorder, sys.executable, "-m", "pi_daemon", "--acp", *model, *args,
                                   cwd=started_in or workspace, env=clean_env(home),
                                   transport_kwargs={"stderr": log.fileno()}) as (conn, process):
        caps = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs))
        init = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=caps), 30)
        assert init.protocol_version == 1
        yield conn, recorder
    log.close()
    assert b"Traceback" not in (workspace.parent / f"{workspace.name}-stderr.log").read_bytes()
