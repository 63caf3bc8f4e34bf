"""Workspace trust: which workspaces the user has said may configure the daemon.

A cloned repository is untrusted input. Configuration it ships that could move a secret,
run code or lower a protection takes effect only once the user has trusted that
workspace. The answer lives in the user's home (``$PI_DAEMON_HOME/trust.json``), keyed
by the workspace's resolved path, never in the workspace itself.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from ..json_types import JsonObject
from ..config_file import read_json, write_json
from ..home import home_dir

log = logging.getLogger(__name__)


def trust_file() -> Path:
    return home_dir() / "trust.json"


def _key(workspace: str | Path) -> str:
    return str(Path(workspace).resolve())


def _load() -> dict[str, JsonObject]:
    try:
        data = read_json(trust_file())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", trust_file(), exc)
        return {}
    workspaces = data.get("workspaces") if isinstance(data, dict) else None
    return {k: v for k, v in (workspaces or {}).items() if isinstance(v, dict)}


_this_run: set[str] = set()


def trust_for_this_run(workspace: str | Path) -> None:
    """Trust a workspace until the process ends, remembering nothing (``--trust-workspace``)."""
    _this_run.add(_key(workspace))


def decision(workspace: str | Path) -> bool | None:
    """True or False as the user answered for this workspace, None when never asked."""
    if _key(workspace) in _this_run:
        return True
    entry = _load().get(_key(workspace))
    trusted = entry.get("trusted") if entry else None
    return trusted if isinstance(trusted, bool) else None


def is_trusted(workspace: str | Path) -> bool:
    return decision(workspace) is True


def set_trusted(workspace: str | Path, trusted: bool) -> None:
    """Remember the user's answer (written at once: a crash never leaves half a file)."""
    workspaces = _load()
    workspaces[_key(workspace)] = {"trusted": trusted, "decidedAt": int(time.time() * 1000)}
    write_json(trust_file(), {"workspaces": workspaces})
