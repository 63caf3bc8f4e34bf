"""A frame's bytes -> a JSON-RPC message object, or the error reply it gets instead.

One place for the checks both the fast ``initialize`` path and the server make: JSON
parsing (nesting is bounded by orjson at 1024 levels), lone surrogates, batch arrays,
and which ids are ids.

A frame is read by orjson unless it holds a number of 20 or more digits, which orjson
would read as a float (:mod:`..json_read`); such a frame is read by the json module, so
the integer is exactly the one sent, with the same refusals as orjson's (``NaN``, an
infinite number, a lone surrogate).
"""

from __future__ import annotations

import json
import logging
from typing import Any, NamedTuple, NoReturn

import orjson

from .. import json_read
from .errors import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, preview, shorten

log = logging.getLogger(__name__)



class Cancelling(NamedTuple):
    """How a protocol names the notification that cancels a request, and its id's field."""
    method: str
    id_field: str


LSP_CANCEL = Cancelling("$/cancelRequest", "id")  # the native face (LSP's convention)
ACP_CANCEL = Cancelling("$/cancel_request", "requestId")
# Integers beyond this are not exact in JavaScript (every editor's client): refused as ids.
MAX_ID = 2**53 - 1
ID_RULE = "id must be a string, an integer within ±(2^53-1), or null"


class Refused(Exception):
    """A frame that is not dispatched; ``request_id`` is the id to answer (None: unknown)."""

    def __init__(self, request_id: Any, code: int, message: str, *, reply: bool = True) -> None:
        super().__init__(message)
        self.request_id = request_id
        self.code = code
        self.message = message
        self.reply = reply  # False for a notification or a client's reply: JSON-RPC answers neither


def valid_id(value: Any) -> bool:
    if value is None or isinstance(value, str):
        return True
    return type(value) is int and -MAX_ID <= value <= MAX_ID


def cancel_target(params: Any, cancelling: Cancelling = LSP_CANCEL) -> tuple[bool, Any]:
    """``(True, id)`` for the request a cancel notification names; ``(False, None)``, and a
    warning logged, when its params name none."""
    request_id = params.get(cancelling.id_field) if isinstance(params, dict) else None
    if not valid_id(request_id):
        log.warning("%s needs {\"%s\": <request id>}; ignored: %s", cancelling.method, cancelling.id_field,
                    preview(params))
        return False, None
    return True, request_id


def message_object(frame: bytes) -> dict[str, Any]:
    """The frame's JSON object; raises :class:`Refused` for anything that is not one."""
    try:
        data = orjson.loads(frame) if not json_read.long_number(frame) else _exactly(frame)
    except orjson.JSONDecodeError as exc:
        data = _with_surrogates(frame, exc)
    if isinstance(data, list):
        raise Refused(None, INVALID_REQUEST, "batch arrays are not supported: send one request per frame")
    if not isinstance(data, dict):
        raise Refused(None, INVALID_REQUEST, f"a message must be a JSON object, got {type(data).__name__}")
    return data


def _with_surrogates(frame: bytes, exc: orjson.JSONDecodeError) -> Any:
    """orjson refuses lone surrogates (``"\\ud800"``); find out where one is, to answer the id."""
    text = str(exc)
    if "depth limit" in text:
        raise Refused(None, PARSE_ERROR, "parse error: JSON nested deeper than 1024 levels") from None
    if "surrogate" not in text:
        raise Refused(None, PARSE_ERROR, f"parse error: {shorten(text)}") from None
    try:
        data = json.loads(frame.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise Refused(None, PARSE_ERROR, f"parse error: {shorten(text)}") from None
    if not isinstance(data, dict):
        raise Refused(None, INVALID_REQUEST, "a message must be a JSON object with valid Unicode strings")
    _refuse_surrogate(data)


def _refuse_surrogate(data: dict[str, Any]) -> NoReturn:
    """Refuse a message holding a lone surrogate, answering its id."""
    request_id = data.get("id") if valid_id(data.get("id")) else None
    reply = "id" in data and "result" not in data and "error" not in data
    where = _surrogate_path(data) or "the message"
    problem = "contains a lone surrogate, which is not valid Unicode (send a \\ud8xx\\udcxx pair)"
    if where.startswith("params") and "method" in data:
        raise Refused(request_id, INVALID_PARAMS, f"invalid params: {where}: {problem}", reply=reply)
    raise Refused(request_id, INVALID_REQUEST, f"{where} {problem}", reply=reply)


def _exactly(frame: bytes) -> Any:
    """A frame with a long number, read exactly; what orjson refuses is refused the same way."""
    try:
        data = json.loads(frame.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        reason = "JSON nested deeper than 1024 levels" if isinstance(exc, RecursionError) else str(exc)
        raise Refused(None, PARSE_ERROR, f"parse error: {shorten(reason)}") from None
    if _infinite(data):
        raise Refused(None, PARSE_ERROR, "parse error: a number is too large to be a double")
    if isinstance(data, dict) and _surrogate_path(data) is not None:
        _refuse_surrogate(data)
    return data


def _infinite(data: Any) -> bool:
    stack = [data]
    while stack:
        value = stack.pop()
        if isinstance(value, float):
            if value in (_INF, -_INF):
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


_INF = float("inf")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _surrogate_path(data: dict[str, Any]) -> str | None:
    """The path (``params.text``, ``id``, ``params.items[2]``) of the first lone surrogate, if any."""
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(data.items())]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            if _lone(value):
                return path
        elif isinstance(value, dict):
            for key, item in reversed(value.items()):
                if _lone(key):
                    return f"{path} (a key)"
                stack.append((f"{path}.{key}", item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", item) for i, item in reversed(list(enumerate(value))))
    for key in data:
        if _lone(key):
            return "a key"
    return None


def _lone(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
