"""MCP server configurations: the ``mcp.json`` files and the ACP ``session/new`` list.

``mcp.json`` has the shape other MCP clients use::

    {"mcpServers": {"name": {"command": "npx", "args": [...], "env": {...}, "cwd": "..."},
                    "docs": {"url": "https://…/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}

``$PI_DAEMON_HOME/mcp.json`` is read first, then ``<workspace>/.pi/mcp.json`` — the
latter only once the workspace is trusted (it starts processes and can send the
user's environment to a URL); until then each of its servers is reported as ignored.
A workspace entry replaces a home entry of the same name. ``${NAME}`` in ``env`` and
``headers`` values is replaced by the environment variable. A file or entry that cannot
be used is reported (:class:`ConfigProblem`) and skipped; it never stops the daemon.

A session can bring its own servers (ACP's ``session/new{mcpServers}``): a list of
``{name, command, args, env: [{name, value}]}`` or ``{type: "http", name, url, headers:
[{name, value}]}`` (:func:`from_acp`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import attrs

from ..config_file import read_json
from ..home import home_dir
from ..settings import Ignored

NAME_RULE = re.compile(r"[A-Za-z0-9_-]{1,40}\Z")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_TIMEOUT_S = 60.0


@attrs.frozen
class ServerConfig:
    name: str
    source: str  # the file it came from, or "session"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    timeout: float = DEFAULT_TIMEOUT_S

    @property
    def transport(self) -> str:
        return "stdio" if self.command else "http"


@attrs.frozen
class ConfigProblem:
    source: str
    message: str


def _expand(value: str) -> str:
    return _VAR.sub(lambda m: os.environ.get(m.group(1), ""), value)


def _strings(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{what} must be an array of strings")
    return value


def _mapping(value: Any, what: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{what} must be an object of strings")
    return [(k, _expand(v)) for k, v in value.items()]


def _timeout(entry: dict[str, Any]) -> float:
    value = entry.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError("timeout must be a positive number of seconds")
    return float(value)


def _entry(name: str, entry: Any, source: str, base: Path) -> ServerConfig:
    if not NAME_RULE.match(name):
        raise ValueError("a server name has 1 to 40 letters, digits, '_' or '-'")
    if not isinstance(entry, dict):
        raise ValueError("an entry must be an object")
    kind = entry.get("type")
    if kind not in (None, "stdio", "http", "streamable-http"):
        raise ValueError(f"type {kind!r} is not supported (stdio, http or streamable-http; SSE is not)")
    if isinstance(entry.get("command"), str) and entry["command"]:
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        return ServerConfig(name, source, command=os.path.expanduser(entry["command"]),
                            args=tuple(_strings(entry.get("args"), "args")),
                            env=tuple(_mapping(entry.get("env"), "env")),
                            cwd=str(base / os.path.expanduser(cwd or ".")), timeout=_timeout(entry))
    if isinstance(entry.get("url"), str) and entry["url"].startswith(("http://", "https://")):
        return ServerConfig(name, source, url=entry["url"], headers=tuple(_mapping(entry.get("headers"), "headers")),
                            timeout=_timeout(entry))
    raise ValueError("an entry needs a command (stdio) or an http(s) url (streamable HTTP)")


def read_file(path: Path, base: Path) -> tuple[list[ServerConfig], list[ConfigProblem]]:
    """The servers of one ``mcp.json`` and what could not be used of it; a stdio server
    runs in ``base`` (the workspace) or its ``cwd`` taken from there."""
    if not path.is_file():
        return [], []
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        return [], [ConfigProblem(str(path), f"cannot be read: {exc}")]
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return [], [ConfigProblem(str(path), 'must be an object with an "mcpServers" object')]
    found, problems = [], []
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("enabled") is False:
            continue
        try:
            found.append(_entry(name, entry, str(path), base))
        except ValueError as exc:
            problems.append(ConfigProblem(str(path), f"server {name!r}: {exc}"))
    return found, problems


def workspace_file(workspace: str | Path) -> Path:
    return Path(workspace) / ".pi" / "mcp.json"


def load(workspace: str | Path, trusted: bool) -> tuple[list[ServerConfig], list[ConfigProblem], list[Ignored]]:
    """The configured servers, the problems found, and the workspace servers ignored (untrusted)."""
    home, problems = read_file(home_dir() / "mcp.json", Path(workspace))
    servers = {s.name: s for s in home}
    path = workspace_file(workspace)
    ignored: list[Ignored] = []
    if trusted:
        local, local_problems = read_file(path, Path(workspace))
        problems += local_problems
        servers.update({s.name: s for s in local})
    elif path.is_file():
        ignored = untrusted_servers(path)
    return list(servers.values()), problems, ignored


def untrusted_servers(path: Path) -> list[Ignored]:
    """What an untrusted workspace's ``mcp.json`` would do, for the trust question."""
    try:
        servers = read_json(path).get("mcpServers")
    except (OSError, ValueError, AttributeError):
        servers = None
    if not isinstance(servers, dict) or not servers:
        return [Ignored(str(path), "mcpServers", "would start MCP servers (processes) from the repository")]
    out = []
    for name, entry in servers.items():
        entry = entry if isinstance(entry, dict) else {}
        if isinstance(entry.get("command"), str):
            line = " ".join([entry["command"], *[a for a in entry.get("args") or [] if isinstance(a, str)]])
            effect = f"would start the process `{line[:200]}`"
        elif isinstance(entry.get("url"), str):
            effect = f"would connect to {entry['url'][:200]} with your environment's values in its headers"
        else:
            effect = "would start an MCP server"
        out.append(Ignored(str(path), f"mcpServers.{name}", effect))
    return out


def _pairs(value: Any, what: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} must be an array of {{name, value}}")
    out = []
    for item in value:
        if not (isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("value"), str)):
            raise ValueError(f"{what} must be an array of {{name, value}}")
        out.append((item["name"], item["value"]))
    return out


def from_acp(items: list[Any], cwd: str) -> list[ServerConfig]:
    """A session's own servers in ACP's shape; raises ValueError naming the bad entry."""
    out: list[ServerConfig] = []
    for index, item in enumerate(items):
        where = f"mcpServers[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise ValueError(f"{where}: needs a name")
        if not NAME_RULE.match(item["name"]):
            raise ValueError(f"{where}.name: 1 to 40 letters, digits, '_' or '-'")
        if any(s.name == item["name"] for s in out):
            raise ValueError(f"{where}.name: {item['name']!r} is listed twice")
        kind = item.get("type", "stdio")
        if kind == "stdio" and isinstance(item.get("command"), str) and item["command"]:
            out.append(ServerConfig(item["name"], "session", command=item["command"],
                                    args=tuple(_strings(item.get("args"), f"{where}.args")),
                                    env=tuple(_pairs(item.get("env"), f"{where}.env")), cwd=cwd))
        elif kind == "http" and isinstance(item.get("url"), str) and item["url"].startswith(("http://", "https://")):
            out.append(ServerConfig(item["name"], "session", url=item["url"],
                                    headers=tuple(_pairs(item.get("headers"), f"{where}.headers"))))
        else:
            raise ValueError(f"{where}: needs a command (stdio) or type 'http' with an http(s) url")
    return out
