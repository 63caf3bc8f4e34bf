"""Requests to the user (``permission/request``, ``user/ask``), sent to every connection that can answer.

One request has one id. It goes to every connection holding the session (a subagent's: its
parent's) whose client declared it answers (``capabilities.permissions`` / ``askUser``); the first
answer wins and the others get ``$/cancelRequest``. A connection that attaches to the session
while it is pending gets it too (:meth:`UserRequests.offer`). A connection that leaves without
answering leaves it to the others; with none attached it waits for one, until the permission
timeout. With connections attached of which none can answer, the daemon decides as without a
client (the gate's ``withoutClient`` rule; a dismissed question). With one connection that is
the process's (plain stdio), its input closing answers as an error, as it always did.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import typing
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ..converter import to_wire
from ..events import PermissionTimeout, QuestionTimeout
from ..guard.permission_rules import Rule, describe
from ..guard.permissions import OUTCOMES, TIMED_OUT, Answer, Propose
from ..tools.base import Proposal
from ..tools.details import AskUserDetails
from ..tools.question import Ask, Question, answer_of as question_answer
from ..wire.peer import ClientError, InputClosed
from .types import (PERMISSION_REQUEST, USER_ASK, PermissionOutcome, PermissionRequestParams, PermissionScope,
                    ProposedFile, QuestionOption, Scope, UserAskParams)

if TYPE_CHECKING:
    from ..host.host import Host
    from .server import NativeFace

log = logging.getLogger(__name__)


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


def can_answer(connection: NativeFace, capability: str) -> bool:
    return not connection.gone and not connection.peer.closed and bool(getattr(connection.client, capability))


class Pending:
    """One request to the user, and the connections it was sent to."""

    def __init__(self, method: str, params: Any, capability: str, shared: bool) -> None:
        self.method = method
        self.params = params
        self.capability = capability  # the ClientState flag of a client that answers it
        self.shared = shared
        self.id = f"{method.partition('/')[0]}-{uuid.uuid4().hex[:12]}"
        self.result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.sent: dict[NativeFace, asyncio.Future[Any]] = {}

    def offer(self, connection: NativeFace) -> None:
        if connection in self.sent or self.result.done() or not can_answer(connection, self.capability):
            return
        _, answer = connection.peer.send_request(self.method, self.params, msg_id=self.id)
        self.sent[connection] = answer
        answer.add_done_callback(functools.partial(self._answered, connection))

    def _answered(self, connection: NativeFace, answer: asyncio.Future[Any]) -> None:
        if answer.cancelled() or self.result.done():
            return
        exc = answer.exception()
        if isinstance(exc, InputClosed) and self.shared:
            return  # that client left; the others may still answer
        if exc is not None:
            self.result.set_exception(exc)
        else:
            self.result.set_result(answer.result())

    def withdraw(self) -> None:
        """``$/cancelRequest`` to every connection that has not answered."""
        for connection, answer in self.sent.items():
            if not answer.done():
                connection.peer.withdraw(self.id)


class UserRequests:
    """The pending requests to the user, by the session they are about (a subagent's: its root)."""

    def __init__(self, host: Host, shared: bool, holders: Callable[[str], list[NativeFace]],
                 root: Callable[[str], str]) -> None:
        self.host = host
        self.shared = shared
        self.holders = holders  # root session id -> the connections holding it
        self.root = root  # session id -> the id of the session whose connections answer for it
        self.pending: dict[str, list[Pending]] = {}

    def busy(self) -> bool:
        return any(self.pending.values())

    def offer(self, connection: NativeFace, session_id: str) -> None:
        """``connection`` attached to a session: what is pending for it is sent to it too."""
        for pending in list(self.pending.get(session_id, [])):
            pending.offer(connection)

    def _may_ask(self, root: str, capability: str) -> bool:
        """Some client can answer, or (several clients) none is attached and one may come."""
        holders = self.holders(root)
        if any(can_answer(c, capability) for c in holders):
            return True
        return self.shared and not any(not c.gone and not c.peer.closed for c in holders)

    async def ask_permission(self, session_id: str, call_id: str, tool: str, args: dict[str, Any], title: str,
                             options: list[str], rule: Rule, propose: Propose) -> Answer | None:
        """Ask the clients (``permission/request``), showing a write's or edit's proposed text; None when
        none can be asked."""
        if not self._may_ask(self.root(session_id), "permissions"):
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
            result = await self._ask(PERMISSION_REQUEST.name, params, "permissions", session_id,
                                     PermissionTimeout(tool_call_id=call_id, tool_name=tool, timeout_seconds=timeout))
        except ClientError as exc:
            log.warning("permission/request failed: %s", exc)
            return Answer("cancelled")
        return Answer(TIMED_OUT) if result is TIMED_OUT else answer_of(result)

    def questions_for(self, session_id: str, opener_answers: bool) -> Ask | None:
        """How the agent of a session asks its user (``ask_user``): only when the client that opened it answers."""
        return functools.partial(self.ask_question, session_id) if opener_answers else None

    async def ask_question(self, session_id: str, call_id: str, question: Question) -> AskUserDetails:
        """Ask the clients (``user/ask``); an error reply, or no client that can answer, is a dismissed question."""
        if not self._may_ask(self.root(session_id), "ask_user"):
            return AskUserDetails(outcome="dismissed")
        asking = self.host.sessions.sessions.get(session_id)
        params = to_wire(UserAskParams(
            session_id=session_id, tool_call_id=call_id, question=question.question,
            options=[QuestionOption(label=label, description=description) for label, description in question.options],
            multi_select=question.multi_select, allow_text=question.allow_text,
            timeout_seconds=self.host.permission_timeout,
            parent_session_id=asking.parent_session_id if asking is not None else None))
        try:
            result = await self._ask(USER_ASK.name, params, "ask_user", session_id,
                                     QuestionTimeout(tool_call_id=call_id))
        except ClientError as exc:
            log.warning("user/ask failed: %s", exc)
            return AskUserDetails(outcome="dismissed")
        return AskUserDetails(outcome="timeout") if result is TIMED_OUT else question_answer(question, result)

    async def _ask(self, method: str, params: Any, capability: str, session_id: str, timed_out: Any) -> Any:
        """One request to the user waiting at most the permission timeout: the first answer, or
        TIMED_OUT (the request withdrawn, ``timed_out`` told to the session's clients). A ClientError
        is raised; an abort cancels the wait, which withdraws the request."""
        timeout = self.host.permission_timeout
        root = self.root(session_id)
        pending = Pending(method, params, capability, self.shared)
        self.pending.setdefault(root, []).append(pending)
        try:
            for connection in self.holders(root):
                pending.offer(connection)
            return await asyncio.wait_for(asyncio.shield(pending.result), timeout)
        except TimeoutError:
            log.warning("%s %s was not answered within %g s", method, pending.id, timeout)
            session = self.host.sessions.sessions.get(session_id)
            if session is not None:
                await session.observers.emit(timed_out)
            return TIMED_OUT
        finally:
            pending.withdraw()
            waiting = self.pending.get(root, [])
            if pending in waiting:
                waiting.remove(pending)
            if not waiting:
                self.pending.pop(root, None)
