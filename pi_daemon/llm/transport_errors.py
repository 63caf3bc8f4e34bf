"""The errors of a provider request that failed below HTTP: connecting, sending, reading.

Both ways a request goes (the daemon's own :mod:`.http_transport`, or httpx's transport when
the environment names a proxy) raise these, so the texts and the retry decisions of
:mod:`.http` do not depend on which one served it. The class names are httpx's: an error
without a text of its own is shown by its class name, as it was when httpx raised it.
"""

from __future__ import annotations

import errno
import re


class HTTPError(Exception):
    """Anything a request can fail with below the provider's answer."""


class TransportError(HTTPError):
    """The request or its answer did not get through; ``url`` is the request's."""

    def __init__(self, message: str = "", url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class TimeoutException(TransportError):
    pass


class ConnectTimeout(TimeoutException):
    pass


class ReadTimeout(TimeoutException):
    pass


class WriteTimeout(TimeoutException):
    pass


class PoolTimeout(TimeoutException):
    pass


class NetworkError(TransportError):
    pass


class ConnectError(NetworkError):
    pass


class ReadError(NetworkError):
    pass


class WriteError(NetworkError):
    pass


class CloseError(NetworkError):
    pass


class ProtocolError(TransportError):
    pass


class RemoteProtocolError(ProtocolError):
    pass


class LocalProtocolError(ProtocolError):
    pass


class ProxyError(TransportError):
    pass


class UnsupportedProtocol(TransportError):
    pass


class SSEError(TransportError):
    """The answer is not an event stream (httpx_sse's error of the same name was a transport error)."""


class TooLarge(TransportError):
    """The answer passed one of the daemon's limits (a line, an event, a whole answer, a probe's
    body); the text names the server and the limit."""


class DecodingError(HTTPError):
    """The answer's ``Content-Encoding`` could not be decoded."""


_BY_NAME: dict[str, type[HTTPError]] = {
    cls.__name__: cls for cls in (
        TransportError, TimeoutException, ConnectTimeout, ReadTimeout, WriteTimeout, PoolTimeout,
        NetworkError, ConnectError, ReadError, WriteError, CloseError, ProtocolError,
        RemoteProtocolError, LocalProtocolError, ProxyError, UnsupportedProtocol, DecodingError)}


def converted(exc: Exception, url: str | None) -> HTTPError:
    """The error of this module for an httpx one (the nearest class by name along its bases)."""
    for base in type(exc).__mro__:
        cls = _BY_NAME.get(base.__name__)
        if cls is not None:
            if issubclass(cls, TransportError):
                return cls(str(exc), url)
            return cls(str(exc))
    return HTTPError(str(exc))


_JOINED = "Multiple exceptions: "


def joined_refusal(exc: OSError) -> OSError:
    """``exc``, or a :class:`ConnectionRefusedError` when it is asyncio's join of the failures
    of a name's several addresses (``localhost``: ``::1`` and ``127.0.0.1``) and each of them
    was a refusal: nothing listens there, whichever address was tried."""
    text = str(exc)
    if type(exc) is OSError and exc.errno is None and text.startswith(_JOINED):
        codes = re.findall(r"\[Errno (\d+)\]", text)
        if codes and all(int(code) == errno.ECONNREFUSED for code in codes):
            return ConnectionRefusedError(errno.ECONNREFUSED, text)
    return exc
