"""The protocol's declaration: every method, notification and daemon -> client request, once.

A client -> daemon method is declared by decorating its handler::

    @method("session/new", params=SessionNewParams, result=SessionNewResult,
            errors=(ModelUnavailableError,), summary="create a session; it becomes current")
    async def session_new(app: App, p: SessionNewParams) -> SessionNewResult: ...

That one declaration is all there is: dispatch, ``initialize``'s capabilities, the JSON
Schema, the TypeScript and Lua types and the docs/protocol.md check are derived from
:data:`METHODS`; the table in :mod:`.methods` names the module that declares each method, so
a connection imports a handler's module on the method's first call (tests/test_layers.py
checks the table against the declarations). Messages the daemon sends are declared with :func:`notification` and
:func:`client_request`, and sent through the returned object.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Generic, TypeVar, overload

import attrs

from ..wire.errors import RpcError

P = TypeVar("P")
R = TypeVar("R")
Handler = Callable[[Any, P], Awaitable[R]]


@attrs.frozen
class MethodSpec(Generic[P, R]):
    """One message of the protocol: its name, its params and result types, what it may answer."""

    name: str
    params: type[P]
    result: type[R] | None  # None: a notification, never answered
    summary: str
    errors: tuple[type[RpcError], ...] = ()
    handler: Handler[P, R] | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def is_request(self) -> bool:
        return self.result is not None


METHODS: dict[str, MethodSpec[Any, Any]] = {}
"""Client -> daemon: requests, and the notifications the daemon handles (``exit``)."""
NOTIFICATIONS: dict[str, MethodSpec[Any, None]] = {}
"""Daemon -> client notifications."""
CLIENT_REQUESTS: dict[str, MethodSpec[Any, Any]] = {}
"""Daemon -> client requests."""


def _add(table: dict[str, Any], spec: MethodSpec[Any, Any]) -> None:
    if spec.name in METHODS or spec.name in NOTIFICATIONS or spec.name in CLIENT_REQUESTS:
        raise ValueError(f"{spec.name} is declared twice")
    table[spec.name] = spec


@overload
def method(name: str, *, params: type[P], result: type[R], summary: str,
           errors: tuple[type[RpcError], ...] = ()) -> Callable[[Handler[P, R]], Handler[P, R]]: ...
@overload
def method(name: str, *, params: type[P], result: None, summary: str,
           errors: tuple[type[RpcError], ...] = ()) -> Callable[[Handler[P, None]], Handler[P, None]]: ...


def method(name: str, *, params: type[P], result: type[R] | None, summary: str,
           errors: tuple[type[RpcError], ...] = ()) -> Callable[[Handler[P, Any]], Handler[P, Any]]:
    """Declare a client -> daemon method and register the decorated function as its handler.

    ``result=None`` declares a notification (the handler runs, nothing is answered).
    """

    def register(handler: Handler[P, Any]) -> Handler[P, Any]:
        _add(METHODS, MethodSpec(name, params, result, summary, errors, handler))
        return handler

    return register


def notification(name: str, *, params: type[P], summary: str) -> MethodSpec[P, None]:
    """Declare a daemon -> client notification."""
    spec: MethodSpec[P, None] = MethodSpec(name, params, None, summary)
    _add(NOTIFICATIONS, spec)
    return spec


def client_request(name: str, *, params: type[P], result: type[R], summary: str) -> MethodSpec[P, R]:
    """Declare a daemon -> client request."""
    spec = MethodSpec(name, params, result, summary)
    _add(CLIENT_REQUESTS, spec)
    return spec


def remove(name: str) -> None:
    """Forget a declaration (a test's throwaway method)."""
    for table in (METHODS, NOTIFICATIONS, CLIENT_REQUESTS):
        table.pop(name, None)
