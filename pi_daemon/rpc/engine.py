"""pygls as the daemon's JSON-RPC engine: the server, its features, and checked frames as pygls messages.

Imported when the daemon first needs pygls, or in the background once it is idle (see
:mod:`.early`); everything that imports pygls or lsprotocol is here or in :mod:`.protocol`.
"""

from __future__ import annotations

import logging
import typing
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping

import cattrs
from lsprotocol.types import ResponseError, ResponseErrorMessage
from pygls.exceptions import JsonRpcException
from pygls.protocol.json_rpc import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage
from pygls.server import JsonRPCServer

from . import errors as E
from .errors import RpcError, preview
from .protocol import DaemonProtocol

if TYPE_CHECKING:
    from .server import Daemon

log = logging.getLogger(__name__)

__all__ = ["JsonRpcException", "build", "notification", "request", "response"]


def _pygls_feature(serve: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
    async def feature(raw_params: Any) -> Any:
        try:
            return await serve(raw_params)
        except RpcError as error:
            raise JsonRpcException(error.message, error.code, error.data) from None

    feature.__name__ = serve.__name__
    return feature


def build(daemon: Daemon, features: Mapping[str, Callable[[Any], Awaitable[Any]]]) -> DaemonProtocol:
    """A pygls server whose protocol writes through the daemon, serving ``features``."""
    server = JsonRPCServer(DaemonProtocol, cattrs.Converter)
    protocol: DaemonProtocol = server.protocol  # type: ignore[assignment]
    protocol.send_frame = daemon.send_frame
    for name, serve in features.items():
        server.feature(name)(_pygls_feature(serve))
    return protocol


def request(request_id: Any, method: str, params: Any) -> Any:
    return JsonRPCRequestMessage(id=typing.cast(str | int, request_id), method=method, jsonrpc="2.0", params=params)


def notification(method: str, params: Any) -> Any:
    return JsonRPCNotification(method=method, jsonrpc="2.0", params=params)


def response(data: dict[str, Any]) -> Any:
    """A client's reply to a daemon request, as pygls takes it."""
    if "error" not in data:
        return JsonRPCResponseMessage(id=data["id"], jsonrpc="2.0", result=data.get("result"))
    error = data["error"]
    if isinstance(error, dict) and type(error.get("code")) is int and isinstance(error.get("message", ""), str):
        reply = ResponseError(code=error["code"], message=error.get("message", ""), data=error.get("data"))
    else:  # still an answer: the daemon's request fails rather than waiting forever
        log.warning("malformed error reply from the client to %s: %s", data["id"], preview(error))
        reply = ResponseError(code=E.INTERNAL_ERROR, message="the client sent a malformed error reply")
    return ResponseErrorMessage(id=data["id"], error=reply)
