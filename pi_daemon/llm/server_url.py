"""Where a model server runs: on this machine or a private network, and the root it serves at."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit


def is_local(url: str) -> bool:
    """A server on this machine or a private network (where local model servers run)."""
    try:
        host = urlsplit(url).hostname or ""
    except (ValueError, TypeError):
        return False
    if host in ("localhost", "") or host.endswith(".local"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_unspecified


def is_loopback(url: str) -> bool:
    """A server on this machine itself (``localhost``, ``127.0.0.0/8``, ``::1``, ``0.0.0.0``)."""
    try:
        host = urlsplit(url).hostname or ""
    except (ValueError, TypeError):
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def server_root(base_url: str) -> str:
    """``http://host:8080/v1`` -> ``http://host:8080``: llama.cpp serves ``/props`` at the root."""
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root
