"""Provider requests through a proxy: httpx's client, which knows proxies and ``NO_PROXY``.

Used only when the environment names a proxy (:func:`.http_transport.environment_proxied`);
httpx is imported with this module. Its errors are turned into those of
:mod:`.transport_errors` where they leave it, so that a request through a proxy fails with the
same texts as one sent directly.
"""

from __future__ import annotations

import ssl
from typing import AsyncIterator

import httpx

from .http_transport import DEFAULT_HEADERS
from .transport_errors import converted


class _NoCookies(httpx.Cookies):
    """A jar that keeps nothing. httpx hands every response to the client's jar, which wraps
    it in urllib and email objects to look for Set-Cookie; a model API is stateless and the
    reference keeps no cookies either."""

    def extract_cookies(self, response: httpx.Response) -> None:
        pass


class _Client(httpx.AsyncClient):
    _jar = _NoCookies()

    @property  # type: ignore[misc]  # read-only: nothing may set a jar
    def cookies(self) -> httpx.Cookies:
        return self._jar


class ProxiedResponse:
    """An httpx answer with the reading side of :class:`.http_transport.Response`."""

    __slots__ = ("_response", "status_code", "headers", "url")

    def __init__(self, response: httpx.Response, url: str) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers = {name: response.headers[name] for name in response.headers.keys()}
        self.url = url

    async def aiter_bytes(self) -> AsyncIterator[bytes]:
        try:
            async for data in self._response.aiter_bytes():
                yield data
        except httpx.HTTPError as exc:
            raise converted(exc, self.url) from exc

    async def aread(self) -> bytes:
        return b"".join([data async for data in self.aiter_bytes()])

    async def aclose(self) -> None:
        await self._response.aclose()


class ProxiedClient:
    """httpx's client with its transport, its proxies and ``NO_PROXY``."""

    def __init__(self, connect_timeout: float | None, read_timeout: float | None, keep: int,
                 tls: ssl.SSLContext) -> None:
        self._client = _Client(timeout=httpx.Timeout(read_timeout, connect=connect_timeout),
                               limits=httpx.Limits(max_keepalive_connections=keep), verify=tls,
                               headers=DEFAULT_HEADERS)

    @property
    def is_closed(self) -> bool:
        return self._client.is_closed

    async def request(self, method: str, url: str, headers: dict[str, str], body: bytes,
                      timeout: float | None = None) -> ProxiedResponse:
        try:
            request = self._client.build_request(method, url, headers=headers, content=body if body or method not in ("GET", "HEAD") else None,
                                                 timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout)
            return ProxiedResponse(await self._client.send(request, stream=True), url)
        except httpx.HTTPError as exc:
            raise converted(exc, url) from exc

    async def aclose(self) -> None:
        await self._client.aclose()
