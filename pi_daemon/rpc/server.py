"""The daemon: frames in, checked JSON-RPC messages to pygls, replies and events out.

Lifecycle:

* stdin EOF — no more input can come: requests in flight get their answers, active
  runs are allowed to settle (a shell pipe closes stdin right after its last request),
  then the process exits 0. Should stdout break, runs are aborted instead. A user
  command (``bash``) without a ``timeout`` is aborted at EOF: nothing else would end it.
* SIGTERM / SIGINT, or ``shutdown`` — runs are aborted and persisted, requests in
  flight get their answers, exit 0 (``shutdown`` waits for ``exit`` or EOF).
  A second signal exits at once.
* Either way, and on SIGKILL too (see :mod:`..procs`), no process a command started
  outlives the daemon.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import uuid
from typing import Any

import cattrs
import orjson
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
)
from pygls.server import JsonRPCServer

from .. import procs, settings
from ..converter import to_wire
from ..llm.registry import ModelRegistry, ModelUnavailable
from ..session import AgentSession, SessionError, SessionManager, SessionNotFound
from ..session.compaction import load_settings
from ..session.manager import EntryError
from ..session.store import SessionFileError, SessionLocked
from ..tools.permissions import ASK_DEFAULT, OUTCOMES, PermissionGate
from ..tools.workspace import Workspace
from . import errors as E
from .framing import FrameError, encode
from .initialize import ClientState
from .methods import HANDLERS
from .notify import EventSender
from .params import structure_params
from .protocol import DaemonProtocol, dumps
from .transport import EOF, FrameReader, FrameWriter
from .types import METHODS

log = logging.getLogger(__name__)

_SESSION_ERROR_CODES = {"busy": E.AGENT_BUSY, "state": E.INVALID_STATE, "model": E.MODEL_UNAVAILABLE}


class Daemon:
    def __init__(
        self,
        reader: FrameReader,
        writer: FrameWriter,
        *,
        workspace: str,
        registry: ModelRegistry,
        default_model: Any,
        max_frame_bytes: int,
        client: ClientState | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.workspace = workspace
        self.registry = registry
        self.max_frame_bytes = max_frame_bytes
        self.client = client or ClientState()
        self.server = JsonRPCServer(DaemonProtocol, cattrs.Converter)
        self.protocol: DaemonProtocol = self.server.protocol  # type: ignore[assignment]
        self.protocol.send_frame = self.send_frame
        options = settings.load(workspace)
        self.tools_workspace = Workspace(workspace, extra_roots=options.get("workspace", {}).get("extraRoots"))
        self.tools_workspace.allow(self.client.allowed_roots)
        policy = options.get("permissions", {})
        gate = PermissionGate(self.tools_workspace.root, ask=tuple(policy.get("ask", ASK_DEFAULT)),
                              without_client=policy.get("withoutClient", "allow"), asker=self.ask_permission)
        self.sessions = SessionManager(registry, workspace, default_model, on_open=self._watch,
                                       compaction=load_settings(workspace), tools_workspace=self.tools_workspace,
                                       permissions=gate)
        self._stopping = False
        self._shutting_down = False
        self._eof = False
        self._signals = 0
        self._done = asyncio.Event()
        self._client_requests: set[Any] = set()
        for name, handler in HANDLERS.items():
            self.server.feature(name)(self._wrap(name, handler))

    # --- output ----------------------------------------------------------------------

    def send_frame(self, body: bytes) -> None:
        self.writer.write(encode(body, self.reader.framing))

    def send_error(self, request_id: Any, code: int, message: str) -> None:
        self.send_frame(dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}))

    def _watch(self, session: AgentSession) -> None:
        session.subscribe(EventSender(session.id, self.writer, self.send_frame))

    async def ask_permission(self, session_id: str, call_id: str, tool: str, args: dict, title: str,
                             options: list[str]) -> str | None:
        """Ask the client (``permission/request``); None when it cannot be asked."""
        if not self.client.permissions or self._eof:
            return None
        msg_id = f"permission-{uuid.uuid4().hex[:12]}"
        params = {"sessionId": session_id, "toolCallId": call_id, "toolName": tool, "args": args,
                  "title": title, "options": options}
        future = asyncio.wrap_future(self.protocol.send_request("permission/request", params, msg_id=msg_id))
        try:
            result = await future
        except asyncio.CancelledError:
            self.protocol._request_futures.pop(msg_id, None)
            if not self._eof:
                self.protocol.notify("$/cancelRequest", {"id": msg_id})
            raise
        except JsonRpcException as exc:
            log.warning("permission/request %s failed: %s", msg_id, exc)
            return "cancelled"
        outcome = result.get("outcome") if isinstance(result, dict) else None
        return outcome if outcome in OUTCOMES else "cancelled"

    # --- input -----------------------------------------------------------------------

    def on_items(self, items: list) -> None:
        for item in items:
            if item is EOF:
                self._on_eof()
            elif isinstance(item, FrameError):
                code = E.FRAME_TOO_LARGE if "exceeds the limit" in item.message else E.PARSE_ERROR
                self.send_error(None, code, item.message)
            else:
                self.dispatch(item)

    def dispatch(self, frame: bytes) -> None:
        try:
            data = orjson.loads(frame)
        except (ValueError, UnicodeDecodeError) as exc:
            self.send_error(None, E.PARSE_ERROR, f"parse error: {exc}")
            return
        if isinstance(data, list):
            self.send_error(None, E.INVALID_REQUEST,
                            "batch arrays are not supported: send one request per frame")
            return
        if not isinstance(data, dict):
            self.send_error(None, E.INVALID_REQUEST,
                            f"a message must be a JSON object, got {type(data).__name__}")
            return
        message = self._checked(data)
        if message is not None:
            self.protocol.handle_message(message)

    def _checked(self, data: dict) -> Any:
        has_id = "id" in data
        request_id = data.get("id")
        if has_id and not (request_id is None or isinstance(request_id, (str, int))) or isinstance(request_id, bool):
            self.send_error(None, E.INVALID_REQUEST, "id must be a string, a number or null")
            return None
        if data.get("jsonrpc") != "2.0":
            self.send_error(request_id, E.INVALID_REQUEST, 'jsonrpc must be "2.0"')
            return None
        method = data.get("method")
        if method is None:
            if has_id and ("result" in data or "error" in data):
                return self._response(data)
            self.send_error(request_id, E.INVALID_REQUEST, "a request needs a method")
            return None
        if not isinstance(method, str):
            self.send_error(request_id, E.INVALID_REQUEST, "method must be a string")
            return None
        params = data.get("params")
        if not has_id:
            return JsonRPCNotification(method=method, jsonrpc="2.0", params=params)
        if self._shutting_down and method not in ("exit", "shutdown"):
            self.send_error(request_id, E.INVALID_STATE, "the daemon is shutting down")
            return None
        return JsonRPCRequestMessage(id=request_id, method=method, jsonrpc="2.0", params=params)

    def _response(self, data: dict) -> Any:
        error = data.get("error")
        if isinstance(error, dict):
            return ResponseErrorMessage(
                id=data["id"],
                error=ResponseError(code=int(error.get("code", E.INTERNAL_ERROR)),
                                    message=str(error.get("message", "")), data=error.get("data")),
            )
        return JsonRPCResponseMessage(id=data["id"], jsonrpc="2.0", result=data.get("result"))

    def _wrap(self, name: str, handler):
        params_cls = METHODS[name].params
        daemon = self

        async def feature(raw_params: Any) -> Any:
            task = asyncio.current_task()
            daemon._client_requests.add(task)
            try:
                params = structure_params(raw_params, params_cls)
                result = await handler(daemon, params)
                return to_wire(result) if result is not None else None
            except E.RpcError as exc:
                raise JsonRpcException(exc.message, exc.code, exc.data) from None
            except SessionNotFound as exc:
                raise JsonRpcException(str(exc), E.SESSION_NOT_FOUND) from None
            except SessionLocked as exc:
                raise JsonRpcException(str(exc), E.SESSION_LOCKED) from None
            except SessionFileError as exc:
                raise JsonRpcException(str(exc), E.SESSION_FILE) from None
            except EntryError as exc:
                raise JsonRpcException(f"invalid params: params.entryId: {exc}", E.INVALID_PARAMS) from None
            except SessionError as exc:
                raise JsonRpcException(str(exc), _SESSION_ERROR_CODES[exc.kind]) from None
            except ModelUnavailable as exc:
                raise JsonRpcException(str(exc), E.MODEL_UNAVAILABLE) from None
            except JsonRpcException:
                raise
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the reply stays clean; the log has it all
                log.exception("%s failed", name)
                raise JsonRpcException(f"{name} failed: {type(exc).__name__}: {exc}", E.INTERNAL_ERROR) from None
            finally:
                daemon._client_requests.discard(task)

        feature.__name__ = f"rpc_{name}"
        return feature

    # --- lifecycle -------------------------------------------------------------------

    def _on_eof(self) -> None:
        self._eof = True
        self.sessions.close_input()
        asyncio.ensure_future(self._finish(abort=self.writer.broken))

    def on_signal(self) -> None:
        self._signals += 1
        if self._signals > 1:
            os._exit(1)
        asyncio.ensure_future(self._finish(abort=True))

    def on_broken_pipe(self) -> None:
        asyncio.ensure_future(self._finish(abort=True))

    async def begin_shutdown(self) -> None:
        self._shutting_down = True
        await self.sessions.abort_all()

    def request_exit(self) -> None:
        asyncio.ensure_future(self._finish(abort=True))

    async def _finish(self, *, abort: bool) -> None:
        if self._stopping and not abort:
            return
        first = not self._stopping
        self._stopping = True
        self._shutting_down = True
        if abort:
            await self.sessions.abort_all()
        if first:
            await self._drain_requests()
            if not abort:
                await self.sessions.wait_all_settled()
            await self._drain_requests()
            self.sessions.close_files()  # fsync and release the locks
            procs.kill_all()  # nothing a command started outlives the daemon
            self._done.set()

    async def _drain_requests(self) -> None:
        # Daemon -> client requests can never be answered once stdin is closed.
        for msg_id, future in list(self.protocol._request_futures.items()):
            if future not in self._client_requests and self._eof:
                future.cancel()
        while self._client_requests:
            await asyncio.wait(set(self._client_requests))
        for _ in range(3):  # let pygls's done-callbacks queue the replies
            await asyncio.sleep(0)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.writer.attach(loop)
        self.writer.on_broken = self.on_broken_pipe
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_signal)
        self.reader.attach(loop, self.on_items)
        default = self.sessions.default_model
        log.info("serving workspace %s; default model %s", self.workspace,
                 default.spec if default else "none")
        await self._done.wait()
        log.info("stopped")


def serve(reader: FrameReader, writer: FrameWriter, *, pending: list, **options: Any) -> int:
    """Run the daemon until it stops; ``pending`` are frames read before it started."""

    async def main() -> None:
        daemon = Daemon(reader, writer, **options)
        if pending:
            asyncio.get_running_loop().call_soon(daemon.on_items, pending)
        await daemon.run()

    asyncio.run(main())
    return 0
