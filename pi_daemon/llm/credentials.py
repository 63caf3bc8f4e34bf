"""Where a value from the environment may be sent: the destinations of each ``$NAME``.

A key read from the environment (``ANTHROPIC_API_KEY``, or any ``$NAME`` in an
``apiKey`` or a header) goes only to the base URLs the user's own configuration names
for it: the built-in catalog (each hosted provider's key variable → its base URL) and
the user's ``$PI_DAEMON_HOME/models.json`` (every provider and model that uses
``$NAME``, at its base URL). A trusted workspace may name destinations only for
variables neither of those claims; an untrusted one reads no variable at all
(:mod:`.config`).

The registry asks :meth:`Destinations.refusal` before it hands out a key or resolves a
header, so a refused model is unavailable with the reason; :func:`check_request` is
called by the HTTP layer on every request, so no other path can carry the value
elsewhere.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .config_values import env_references, variable

SHORTEST_CHECKED = 6  # a shorter value is matched only as a whole header value


class CredentialRefused(Exception):
    """An environment value would be sent to a URL its destinations do not include."""


def _parts(url: str) -> tuple[str, str, int | None, str] | None:
    try:
        split = urlsplit(url)
        port = split.port
    except ValueError:
        return None
    if split.username is not None or split.password is not None or not split.hostname:
        return None
    default = {"http": 80, "https": 443}.get(split.scheme.lower())
    return split.scheme.lower(), split.hostname.lower(), port or default, split.path.rstrip("/")


def under(url: str, base: str) -> bool:
    """``url`` is ``base`` or below it: same scheme, host and port, ``base``'s path as a prefix."""
    target, root = _parts(url), _parts(base)
    if target is None or root is None or target[:3] != root[:3]:
        return False
    return target[3] == root[3] or target[3].startswith(root[3] + "/")


def env_names(config: dict[str, Any]) -> set[str]:
    """The variables a provider or model config reads (``apiKey`` and header values)."""
    values = [config.get("apiKey"), *(config.get("headers") or {}).values()]
    return {name for value in values for name in env_references(value)}


class Destinations:
    def __init__(self) -> None:
        self._bases: dict[str, list[str]] = {}

    def add(self, name: str, base_url: str) -> None:
        bases = self._bases.setdefault(name, [])
        if base_url and base_url not in bases:
            bases.append(base_url)

    def claimed(self, name: str) -> bool:
        return name in self._bases

    def names(self) -> list[str]:
        return list(self._bases)

    def refusal(self, name: str, url: str) -> str | None:
        """Why the value of ``$name`` may not go to ``url``, or None when it may."""
        bases = self._bases.get(name, [])
        if any(under(url, base) for base in bases):
            return None
        if not bases:
            return f"{name} is not sent anywhere: no configuration of yours names a base URL for it"
        return (f"{name} is only sent to {', '.join(bases)} (where the built-in catalog or your own "
                f"models.json sends it), not to {url}")


_installed = Destinations()


def install(destinations: Destinations) -> None:
    """Make these the destinations every request is checked against (the registry's)."""
    global _installed
    _installed = destinations


def _carries(header_value: str, secret: str) -> bool:
    return header_value == secret or (len(secret) >= SHORTEST_CHECKED and secret in header_value)


def check_request(url: str, headers: dict[str, str]) -> None:
    """Raise CredentialRefused when a header carries an environment value ``url`` may not get."""
    for name in _installed.names():
        secret = variable(name)
        if not secret:
            continue
        if any(_carries(value, secret) for value in headers.values()):
            reason = _installed.refusal(name, url)
            if reason:
                raise CredentialRefused(f"refused to send the request: {reason}")
