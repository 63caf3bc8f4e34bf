"""The native face: the daemon's own protocol on the one wire (:mod:`pi_daemon.wire.peer`), over the host.

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
import errno
import functools
import logging
import os
import signal
import typing
import uuid
from typing import Any

from ..converter import to_wire
from ..events import PermissionTimeout, QuestionTimeout
from ..host.host import Host
from ..llm.registry import ModelRegistry
from ..session import AgentSession
from ..guard.permission_rules import Rule, describe
from ..guard.permissions import OUTCOMES, TIMED_OUT, Answer, Propose
from ..tools.base import Proposal
from ..tools.details import AskUserDetails
from ..tools.question import Ask, Question, answer_of as question_answer
from ..wire.peer import ClientError, Peer
from ..wire.transport import FrameReader, FrameWriter
from ..wire.framing import encode
from . import methods  # noqa: F401 (registers every method)
from .context import Context
from .dispatch import feature
from .editor_files import EditorFiles
from . import lsp
from .editor_language import EditorLanguage, features_of
from .initialize import ClientState
from .notify import EventSender
from .registry import METHODS
from .types import (PERMISSION_REQUEST, USER_ASK, PermissionOutcome, PermissionRequestParams, PermissionScope,
                    ProposedFile, QuestionOption, Scope, UserAskParams)
from .workspace_trust import WorkspaceTrust

log = logging.getLogger(__name__)

EDITOR_TIMEOUT_S = 60.0


def answer_of(result: Any) -> Answer:
    """A ``permission/request`` answer; one of another shape (an unknown outcome, a ``content`` or
    ``reason`` that is not a string, ``editedArgs`` that are not an object) counts as ``cancelled``.
    (The wire refuses a lone surrogate before it gets here.)"""
    fields = result if isinstance(result, dict) else {}
    outcome, content = fields.get("outcome"), fields.get("content")
    reason, edited = fields.get("reason"), fields.get("editedArgs")
    if outcome not in OUTCOMES or not isinstance(content, (str, type(None))) \
            or not isinstance(reason, (str, type(None))) or not isinstance(edited, (dict, type(None))):
        log.warning("permission/request answered with an unknown outcome, or a content, reason or editedArgs "
                    "of another type: cancelled")
        return Answer("cancelled")
    return Answer(outcome, content, reason=reason, edited_args=edited)


class NativeFace:
    """One connection: the peer, the host it serves, and the order in which it all stops."""

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
        allowed_tools: tuple[str, ...] = (),
        permission_timeout: float | None = None,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.peer = Peer(reader, writer, self._on_eof)
        client = client or ClientState()
        self.host = Host(workspace=workspace, registry=registry, default_model=default_model,
                         allowed_tools=allowed_tools, permission_timeout=permission_timeout,
                         asker=self.ask_permission, on_open=self._watch,
                         file_access=lambda session_id, view: EditorFiles(view, self.ask_editor, session_id, client),
                         language=lambda session_id: (EditorLanguage(self.ask_editor, session_id, client)
                                                      if features_of(client) else None),
                         extra_roots=client.allowed_roots, questions=self.questions_for)
        self.ctx = Context(self.host, client, max_frame_bytes, after_initialize=self._after_initialize,
                           begin_shutdown=self.begin_shutdown, request_exit=self.request_exit)
        self.trust = self.ctx.trust = WorkspaceTrust(self.ctx, self.peer)
        for name, spec in METHODS.items():
            table = self.peer.requests if spec.is_request else self.peer.notifications
            table[name] = feature(self.ctx, spec, self._refuse_while_stopping)
        self._stopping = False
        self._shutting_down = False
        self._signals = 0
        self._done = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()  # work the face started in the background

    def _refuse_while_stopping(self, method: str) -> bool:
        return self._shutting_down and method not in ("exit", "shutdown")

    # --- what the host asks of a face ------------------------------------------------------

    def send_frame(self, body: bytes) -> None:
        self.writer.write(encode(body, self.reader.framing))

    def _watch(self, session: AgentSession) -> None:
        session.subscribe(EventSender(session.id, self.writer, self.send_frame, self.ctx.event_seqs))

    async def ask_permission(self, session_id: str, call_id: str, tool: str, args: dict[str, Any], title: str,
                             options: list[str], rule: Rule, propose: Propose) -> Answer | None:
        """Ask the client (``permission/request``), showing a write's or edit's proposed text; None when
        it cannot be asked."""
        if not self.ctx.client.permissions or self.peer.closed:
            return None
        proposal: Proposal | None = await propose()
        timeout = self.host.permission_timeout
        asking = self.host.sessions.sessions.get(session_id)
        params = to_wire(PermissionRequestParams(
            session_id=session_id, tool_call_id=call_id, tool_name=tool, args=args, title=title,
            options=typing.cast(list[PermissionOutcome], options),
            remember=PermissionScope(scope=typing.cast(Scope, rule.scope), pattern=rule.pattern, label=describe(rule)),
            timeout_seconds=timeout, parent_session_id=asking.parent_session_id if asking is not None else None,
            proposed=None if proposal is None else ProposedFile(path=str(proposal.path), text=proposal.text,
                                                                 exists=proposal.exists)))
        try:
            result = await self._ask_user(PERMISSION_REQUEST.name, params, session_id,
                                          PermissionTimeout(tool_call_id=call_id, tool_name=tool, timeout_seconds=timeout))
        except ClientError as exc:
            log.warning("permission/request failed: %s", exc)
            return Answer("cancelled")
        return Answer(TIMED_OUT) if result is TIMED_OUT else answer_of(result)

    def questions_for(self, session_id: str) -> Ask | None:
        """How the agent of a session asks its user (``ask_user``): only a client that said it answers is asked."""
        return functools.partial(self.ask_question, session_id) if self.ctx.client.ask_user else None

    async def ask_question(self, session_id: str, call_id: str, question: Question) -> AskUserDetails:
        """Ask the client (``user/ask``); an error reply, or a client gone, is a dismissed question."""
        if self.peer.closed:
            return AskUserDetails(outcome="dismissed")
        asking = self.host.sessions.sessions.get(session_id)
        params = to_wire(UserAskParams(
            session_id=session_id, tool_call_id=call_id, question=question.question,
            options=[QuestionOption(label=label, description=description) for label, description in question.options],
            multi_select=question.multi_select, allow_text=question.allow_text,
            timeout_seconds=self.host.permission_timeout,
            parent_session_id=asking.parent_session_id if asking is not None else None))
        try:
            result = await self._ask_user(USER_ASK.name, params, session_id, QuestionTimeout(tool_call_id=call_id))
        except ClientError as exc:
            log.warning("user/ask failed: %s", exc)
            return AskUserDetails(outcome="dismissed")
        return AskUserDetails(outcome="timeout") if result is TIMED_OUT else question_answer(question, result)

    async def _ask_user(self, method: str, params: Any, session_id: str, timed_out: Any) -> Any:
        """One request to the user (``permission/request``, ``user/ask``) waiting at most the permission
        timeout: the answer, or TIMED_OUT (the request withdrawn, ``timed_out`` told to the session's
        clients). A ClientError is raised; an abort cancels the wait, which withdraws the request."""
        timeout = self.host.permission_timeout
        msg_id = f"{method.partition('/')[0]}-{uuid.uuid4().hex[:12]}"
        try:
            return await self.peer.request(method, params, timeout=timeout, msg_id=msg_id)
        except TimeoutError:
            log.warning("%s %s was not answered within %g s", method, msg_id, timeout)
            session = self.host.sessions.sessions.get(session_id)
            if session is not None:
                await session.observers.emit(timed_out)
            return TIMED_OUT

    async def ask_editor(self, method: str, params: dict[str, Any]) -> Any:
        """An ``fs/*``, ``workspace/applyEdit`` or ``editor/*`` request; every failure is an OSError for the tool."""
        if self.peer.closed:
            raise OSError(errno.EPIPE, f"the editor has gone; {method} cannot be asked")
        try:
            return await self.peer.request(method, params, timeout=EDITOR_TIMEOUT_S,
                                           msg_id=f"fs-{uuid.uuid4().hex[:12]}")
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT,
                          f"the editor did not answer {method} within {EDITOR_TIMEOUT_S:g} s") from None
        except ClientError as exc:
            raise OSError(errno.EIO, f"the editor answered {method} with an error: {exc}") from None

    # --- lifecycle -------------------------------------------------------------------

    def _after_initialize(self) -> None:
        self.host.tools_workspace.allow(self.ctx.client.allowed_roots)
        self._background(self.host.prepare())
        if features_of(self.ctx.client):  # the editor answers in LSP's shapes: its vocabulary is read now
            self._background(asyncio.to_thread(lsp.converter))  # (in a thread), not in the first edit's time
        loop = asyncio.get_running_loop()
        # Two turns of the loop: the initialize reply goes out first, then the daemon may ask.
        loop.call_soon(loop.call_soon, self.trust.maybe_ask)
        loop.call_soon(loop.call_soon, self.host.start_background)

    def _background(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_eof(self) -> None:
        self.host.sessions.close_input()
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
        self.trust.cancel()
        await self.host.abort_runs()

    def request_exit(self) -> None:
        asyncio.ensure_future(self._finish(abort=True))

    async def _finish(self, *, abort: bool) -> None:
        if self._stopping and not abort:
            return
        first = not self._stopping
        self._stopping = True
        self._shutting_down = True
        self.trust.cancel()
        if abort:
            await self.host.abort_runs()
        if first:
            await self.peer.drain()
            if not abort:
                await self.host.sessions.wait_all_settled()
            await self.peer.drain()
            await self.host.close()
            self._done.set()

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.writer.attach(loop)
        self.writer.on_broken = self.on_broken_pipe
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, self.on_signal)
        self.reader.attach(loop, self.peer.on_items)
        default = self.host.sessions.default_model
        log.info("serving workspace %s; default model %s", self.host.workspace,
                 default.spec if default else "none")
        self.trust.report()
        # A client that never sends initialize (a shell pipe) gets its servers all the same.
        loop.call_later(0.5, self.host.start_background)
        await self._done.wait()
        log.info("stopped")


def serve(reader: FrameReader, writer: FrameWriter, **options: Any) -> int:
    """Run the daemon until it stops."""

    async def main() -> None:
        await NativeFace(reader, writer, **options).run()

    asyncio.run(main())
    return 0
