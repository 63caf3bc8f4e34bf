"""Local model servers for a first run: finding them on their usual ports, and adding one.

A user without a hosted provider's key often has a local server already: Ollama on 11434,
llama.cpp's ``llama-server`` on 8080, both OpenAI-compatible. :func:`probe` asks each
``GET {baseUrl}/models`` (through :func:`.discovery.ask`, the same reading and limits as a
``models.json`` provider listing no models), all at once on the event loop, and returns the
ones that answered with models by one deadline for the whole probe and the ones still
answering then (whatever listens on a usual port may send a byte a second: it is given up,
its connection closed, and no thread of the daemon's waits for it).

:func:`add_server` writes a server as a provider of the user's own
``$PI_DAEMON_HOME/models.json`` (whose models the daemon asks the server for each time it
reads its configuration), keeping the rest of the file, and :func:`remove_server` takes one
out again; the registry is then reloaded by the caller.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from ..home import home_dir
from .catalog import PROVIDERS
from ..config_file import read_json, write_json
from .discovery import DISCOVERY_TIMEOUT_S, ask

USUAL_SERVERS = (("ollama", "http://127.0.0.1:11434/v1"), ("llama-cpp", "http://127.0.0.1:8080/v1"))
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
API = "openai-completions"


class ServerRefused(ValueError):
    """A server that cannot be added; the text says why (a bad name or URL, an unwritable file)."""


@attrs.define
class FoundServer:
    name: str
    base_url: str
    models: list[str]


def name_for(base_url: str) -> str:
    """A provider name for a server given by URL: its host and port."""
    split = urlsplit(base_url)
    return re.sub(r"[^A-Za-z0-9._-]", "-", f"{split.hostname or 'server'}-{split.port or 80}")


def check_url(base_url: str) -> str:
    split = urlsplit(base_url)
    if split.scheme not in ("http", "https") or not split.hostname or split.username or split.password:
        raise ServerRefused(f"{base_url!r} is not an http(s) URL of a server (e.g. http://127.0.0.1:8080/v1)")
    return base_url.rstrip("/")


async def probe(urls: list[str]) -> tuple[list[FoundServer], list[str]]:
    """The servers among the usual ones and ``urls`` that list models, and the base URLs of those
    that had not answered by :data:`.discovery.DISCOVERY_TIMEOUT_S` (one deadline for all)."""
    candidates = list(USUAL_SERVERS) + [(name_for(url), check_url(url)) for url in urls]
    deadline = asyncio.get_running_loop().time() + DISCOVERY_TIMEOUT_S

    async def asked(name: str, base_url: str) -> FoundServer | str | None:
        try:
            async with asyncio.timeout_at(deadline):
                entries, _ = await ask({"api": API, "baseUrl": base_url})
        except TimeoutError:
            return base_url
        return FoundServer(name, base_url, [e["id"] for e in entries]) if entries else None

    answers = await asyncio.gather(*(asked(name, url) for name, url in candidates))
    return [a for a in answers if isinstance(a, FoundServer)], [a for a in answers if isinstance(a, str)]


def add_server(name: str, base_url: str) -> None:
    """Write ``name`` (replacing one of that name) into the user's models.json, atomically."""
    if not NAME.fullmatch(name) or name in PROVIDERS or name == "faux":
        raise ServerRefused(f"{name!r} cannot name a server: use letters, digits, '.', '_' or '-', "
                            f"and not a built-in provider's name")
    base_url = check_url(base_url)
    path, data = _user_models()
    data["providers"][name] = {"api": API, "baseUrl": base_url, "models": []}
    _write(path, data)


def remove_server(name: str) -> None:
    """Take the server ``name`` out of the user's models.json, keeping the rest of the file."""
    path, data = _user_models()
    if not is_server(data["providers"].get(name)) or name in PROVIDERS:
        raise ServerRefused(f"{name[:100]!r} is not a model server of {path}")
    del data["providers"][name]
    _write(path, data)


def is_server(config: Any) -> bool:
    """Whether a provider's configuration is a model server's: its own base URL."""
    return isinstance(config, dict) and isinstance(config.get("baseUrl"), str)


def _user_models() -> tuple[Path, dict[str, Any]]:
    path = home_dir() / "models.json"
    data: Any = {}
    if path.is_file():  # kept as it is, apart from the provider changed
        try:
            data = read_json(path)
        except (OSError, ValueError) as exc:
            raise ServerRefused(f"{path} cannot be read ({exc}); fix it or move it aside first") from None
    if not isinstance(data, dict) or not isinstance(data.setdefault("providers", {}), dict):
        raise ServerRefused(f"{path} is not an object with a providers object; fix it or move it aside first")
    return path, data


def _write(path: Path, data: dict[str, Any]) -> None:
    try:
        write_json(path, data)
    except OSError as exc:
        raise ServerRefused(f"{path} could not be written: {exc.strerror or exc}") from None
