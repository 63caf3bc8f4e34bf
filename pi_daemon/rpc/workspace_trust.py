"""Workspace trust on the wire: what is ignored, asking the client once, applying the answer.

Until the user trusts the workspace, the fields of its ``.pi/settings.json`` and
``.pi/models.json`` that could move a secret or lower a protection are ignored
(:mod:`pi_daemon.settings`, :mod:`pi_daemon.llm.config`), and so are the servers of its
``.pi/mcp.json`` (they start processes, :mod:`pi_daemon.mcp.config`); ``getState`` and the log say
which. A client that declared ``capabilities.workspaceTrust`` is asked once
(``workspace/trust``) when there is something to ignore and no remembered answer (with several
connections, one that can answer; if it leaves unanswered, the next one is asked); the
answer is remembered (:mod:`pi_daemon.guard.trust`) and a "yes" applies the workspace's
configuration at once: the registry is reloaded in place and the settings applied again.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any, Callable

from .. import settings
from ..guard import trust
from ..llm.config import ConfigError
from . import types as t

from ..wire.peer import InputClosed

if TYPE_CHECKING:
    from ..host.host import Host
    from ..wire.peer import Peer

log = logging.getLogger(__name__)


class WorkspaceTrust:
    def __init__(self, host: "Host") -> None:
        self.host = host
        self.workspace = host.workspace
        self.decision = trust.decision(self.workspace)
        self.ignored = self._ignored()
        self._asked = False
        self._pending: tuple["Peer", str] | None = None
        self.on_unanswered: Callable[[], None] | None = None  # the asked client left without answering

    @property
    def pending(self) -> bool:
        return self._pending is not None

    def _ignored(self) -> list[settings.Ignored]:
        return (settings.layered(self.workspace).ignored + list(self.host.registry.ignored)
                + list(self.host.mcp.ignored))

    def state(self) -> t.WorkspaceTrustState:
        return t.WorkspaceTrustState(trusted=self.decision is True, decided=self.decision is not None,
                                     ignored=[t.TrustReason(i.file, i.field, i.effect) for i in self.ignored])

    def report(self) -> None:
        if self.ignored and self.decision is not True:
            log.warning("workspace %s is %s; ignoring %s", self.workspace,
                        "not trusted" if self.decision is False else "not trusted yet",
                        "; ".join(f"{i.file}: {i.field} ({i.effect})" for i in self.ignored))

    def maybe_ask(self, peers: list["Peer"]) -> None:
        """Send ``workspace/trust`` to the first of ``peers`` (clients that can answer) still
        reading, if nothing was decided or asked yet."""
        peer = next((p for p in peers if not p.closed), None)
        if self._asked or not self.ignored or self.decision is not None or peer is None or self.host.stopping:
            return
        self._asked = True
        msg_id = f"trust-{uuid.uuid4().hex[:12]}"
        self._pending = (peer, msg_id)
        params = {"workspace": str(self.workspace),
                  "reasons": [{"file": i.file, "field": i.field, "effect": i.effect} for i in self.ignored]}
        _, future = peer.send_request(t.WORKSPACE_TRUST.name, params, msg_id=msg_id)
        # Applied while the reply is being handled, so the next request already sees it.
        future.add_done_callback(self._answered)

    def _answered(self, future: Any) -> None:
        self._pending = None
        if future.cancelled():
            return
        exc = future.exception()
        if isinstance(exc, InputClosed) and self.on_unanswered is not None:
            self._asked = False  # that client left: another one may answer
            self.on_unanswered()
            return
        if exc is not None:
            log.warning("workspace/trust failed: %s; the workspace stays untrusted", exc)
            return
        result = future.result()
        trusted = result.get("trusted") if isinstance(result, dict) else None
        if not isinstance(trusted, bool):
            log.warning("workspace/trust answered %r, not {trusted: boolean}; the workspace stays untrusted", result)
            return
        self.decide(trusted)

    def decide(self, trusted: bool) -> None:
        trust.set_trusted(self.workspace, trusted)
        self.decision = trusted
        if not trusted:
            log.warning("workspace %s not trusted; its configuration stays ignored", self.workspace)
            return
        try:
            self.host.registry.reload(trusted=True)
        except (ConfigError, OSError) as exc:
            log.error("workspace %s trusted, but its models.json cannot be used: %s", self.workspace, exc)
        self.host.apply_settings()
        self.host.sessions.refresh_models()
        self.ignored = self._ignored()
        log.warning("workspace %s trusted; its configuration applies", self.workspace)

    def cancel(self) -> None:
        """Withdraw an unanswered question (shutdown): ``$/cancelRequest``, unless stdin is gone."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending[0].withdraw(pending[1])

