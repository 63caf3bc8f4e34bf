"""One MCP server at run time: started in the background, its tools listed, calls made, restarts.

The server's whole life — transport, ``ClientSession``, ``initialize``, ``tools/list`` —
runs in one owner task (the SDK's anyio scopes must be left by the task that entered
them); tool calls are made from the agent's tasks through the session. States:
``starting`` → ``ready`` (with its tools) or ``failed`` (with the reason). A call that
finds the connection gone (the server crashed) or that the server does not answer in
time (it hangs) fails with a clear error and stops the server; the next call starts it
again. An abort cancels the call and leaves a healthy server running.

A stdio server's stderr goes to an anonymous file whose last lines explain a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import tempfile
from typing import TYPE_CHECKING, Any, Callable

import attrs

from .. import procs
from ..guard import programs
from ..cancel import CancelToken, race
from .config import ServerConfig

if TYPE_CHECKING:
    from mcp.types import PaginatedRequestParams

log = logging.getLogger(__name__)

_sdk: dict[str, Any] = {}
_sdk_lock: asyncio.Lock | None = None


async def load_sdk() -> dict[str, Any]:
    """The SDK's client parts, imported once in a worker thread (it takes most of a second)."""
    global _sdk_lock
    if _sdk:
        return _sdk
    _sdk_lock = _sdk_lock or asyncio.Lock()
    async with _sdk_lock:
        if not _sdk:
            def imports() -> dict[str, Any]:
                mcp = importlib.import_module("mcp")
                http = importlib.import_module("mcp.client.streamable_http")
                return {"ClientSession": mcp.ClientSession, "StdioServerParameters": mcp.StdioServerParameters,
                        "stdio_client": mcp.stdio_client, "streamable_http_client": http.streamable_http_client,
                        "httpx2": importlib.import_module("httpx2"), "types": importlib.import_module("mcp.types")}
            _sdk.update(await asyncio.to_thread(imports))
    return _sdk


@attrs.frozen
class RemoteTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    read_only: bool = False  # the server's readOnlyHint



class CallFailed(Exception):
    """A tool call that did not get an answer; the text is what the model is told."""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    text = str(exc) or type(exc).__name__
    return text if isinstance(exc, (OSError, CallFailed)) else f"{type(exc).__name__}: {text}"


class McpConnection:
    def __init__(self, config: ServerConfig, on_change: Callable[["McpConnection"], None] | None = None) -> None:
        self.config = config
        self.name = config.name
        self.state = "stopped"
        self.error: str | None = None
        self.tools: list[RemoteTool] = []
        self.starts = 0
        # Starting includes the server's own start-up (an npx download, say): never shorter than 30 s.
        self.start_timeout = max(config.timeout, 30.0)
        self._on_change = on_change
        self._session: Any = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._stderr: Any = None

    def _changed(self, state: str, error: str | None = None) -> None:
        self.state, self.error = state, error
        if state == "failed":
            log.warning("MCP server %s (%s): %s", self.name, self.config.source, error)
        else:
            log.info("MCP server %s: %s%s", self.name, state,
                     f" with {len(self.tools)} tools" if state == "ready" else "")
        if self._on_change is not None:
            self._on_change(self)

    def start(self) -> None:
        """Start in the background (no-op while starting or ready)."""
        if self._task is not None and not self._task.done():
            return
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self.starts += 1
        self._changed("starting")
        self._task = asyncio.ensure_future(self._run())

    def _transport(self, sdk: dict[str, Any]) -> Any:
        c = self.config
        if c.transport == "stdio":
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
            # marked as the daemon's: nothing it starts outlives the daemon, not even after a SIGKILL
            command = c.command or ""
            if os.sep not in command:  # a bare name: a launcher (npx, uvx) the daemon runs itself
                found = programs.which(command)
                if found is None:
                    raise CallFailed(f"could not start: {programs.missing(command)}")
                command = found
            # what the launcher looks up in turn (npx's node) comes from the same folders, unless the config says
            env = {"PATH": programs.search_path(), **dict(c.env), **procs.helper_mark()}
            params = sdk["StdioServerParameters"](command=command, args=list(c.args), env=env, cwd=c.cwd)
            return sdk["stdio_client"](params, errlog=self._stderr)
        client = sdk["httpx2"].AsyncClient(headers=dict(c.headers), timeout=c.timeout)
        return sdk["streamable_http_client"](c.url, http_client=client)

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            lines = [line.rstrip() for line in self._stderr.read()[-4000:].splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its stderr ends: {' | '.join(lines[-3:])[-600:]})" if lines else ""

    async def _run(self) -> None:
        try:
            sdk = await load_sdk()
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self._transport(sdk))
                session = await stack.enter_async_context(sdk["ClientSession"](read, write))
                try:
                    await asyncio.wait_for(self._handshake(session), self.start_timeout)
                except asyncio.TimeoutError:
                    raise CallFailed(f"did not finish starting within {self.start_timeout:g} s") from None
                self._session = session
                self._changed("ready")
                self._ready.set()
                await self._stop.wait()
                self._session = None
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # noqa: BLE001 - every failure is a state, never a crash
            self._fail(self._start_failure(exc))
        finally:
            self._session = None
            self._ready.set()
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None

    def _start_failure(self, exc: BaseException) -> str:
        if self.state == "ready":  # stopping after a failed call: the reason is already set
            return self.error or _reason(exc)
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        what = str(exc) if isinstance(exc, CallFailed) else f"could not start: {_reason(exc)}"
        return f"{what}{self._stderr_tail()}"

    def _fail(self, reason: str) -> None:
        if self.state == "failed" and self.error:
            return
        self._changed("failed", reason)

    async def _handshake(self, session: Any) -> None:
        await session.initialize()
        tools, cursor = [], None
        while True:
            page: PaginatedRequestParams | None = \
                _sdk["types"].PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=page)
            tools += [RemoteTool(t.name, t.description or "", t.input_schema or {"type": "object"},
                                bool(t.annotations and t.annotations.read_only_hint)) for t in listed.tools]
            cursor = getattr(listed, "next_cursor", None)
            if not cursor:
                break
        self.tools = tools

    async def wait_ready(self, cancel: CancelToken) -> None:
        """Start if needed and wait until ready; raises CallFailed when it cannot start."""
        if self.state in ("stopped", "failed"):
            self.start()
        await race(self._ready.wait(), cancel)
        if self.state != "ready" or self._session is None:
            raise CallFailed(f"MCP server {self.name!r} is not available: {self.error or self.state}")

    async def call(self, tool: str, args: dict[str, Any], cancel: CancelToken) -> Any:
        """``tools/call``; the SDK's result. Raises CallFailed (server gone or hung) or Cancelled."""
        await self.wait_ready(cancel)
        session = self._session
        try:
            return await race(asyncio.wait_for(session.call_tool(tool, args), self.config.timeout), cancel)
        except asyncio.TimeoutError:
            reason = (f"MCP server {self.name!r} did not answer the {tool} call within {self.config.timeout:g} s; "
                      "it was stopped and will be restarted on the next call")
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001
            if type(exc).__name__ == "Cancelled":
                raise
            if self._healthy_error(exc):
                raise CallFailed(f"MCP server {self.name!r} refused the {tool} call: {_reason(exc)}") from None
            reason = (f"MCP server {self.name!r} failed during the {tool} call ({_reason(exc)}){self._stderr_tail()}; "
                      "it was stopped and will be restarted on the next call")
        self._fail(reason)
        await self.stop()
        raise CallFailed(reason)

    @staticmethod
    def _healthy_error(exc: Exception) -> bool:
        """A JSON-RPC error answer (unknown tool, bad arguments): the server itself is fine."""
        error = getattr(exc, "error", None)
        code = getattr(error, "code", None)
        return isinstance(code, int) and code not in (-32000, -32001) and "closed" not in str(exc).lower()

    async def stop(self) -> None:
        task = self._task
        self._stop.set()
        if task is None or task.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(task), 10)
        except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - stopping never fails the caller
            task.cancel()
        if self.state in ("ready", "starting"):
            self._changed("stopped")
