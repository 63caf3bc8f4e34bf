"""Model requests and the environment's proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``).

httpx reads those variables itself (``trust_env``). A server on this machine (``localhost``,
``127.0.0.1``, ``::1``) is never asked through a proxy: a proxy elsewhere cannot reach this
machine's loopback, and a proxy variable exported for the web would otherwise turn every local
model server into "connection refused". Any other server goes through the proxy the environment
names for it; when that proxy refuses the connection, the error names the proxy
(:func:`proxy_for`), not the model server it never reached. docs/models.md says the same.
"""

from __future__ import annotations

import urllib.request
from urllib.parse import urlsplit, urlunsplit

from .server_url import is_loopback


def uses_environment_proxy(base_url: str) -> bool:
    """Whether requests to ``base_url`` may go through the environment's proxy (httpx's ``trust_env``)."""
    return not is_loopback(base_url)


def proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (credentials left out), or None."""
    if is_loopback(url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.hostname and urllib.request.proxy_bypass(parts.hostname):
        return None
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy:
        return None
    try:
        shown = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        netloc = shown.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if shown.port:
            netloc += f":{shown.port}"
    except ValueError:
        return "(an unreadable proxy URL)"
    return urlunsplit((shown.scheme, netloc, "", "", ""))
