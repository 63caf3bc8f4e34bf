"""Where permission rules come from: the user's remembered answers and the workspace's file.

Remembered ``allow_always`` / ``reject_always`` answers live in the user's home config,
``$PI_DAEMON_HOME/permissions.json``, in a section per workspace (keyed by its resolved
path) — never in the workspace, so a repository cannot ship them and the agent cannot
write them with its file tools.

A workspace may ship ``.pi/permissions.json`` with the same ``allow`` / ``reject`` lists.
Its ``reject`` rules always apply (they only add protection); its ``allow`` rules only
once the user trusts the workspace.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from ..config_file import read_json, write_json
from ..home import home_dir
from .permission_rules import Rule, rules_from

log = logging.getLogger(__name__)

KINDS = ("allow", "reject")


def _read_json(path: Path) -> Any:
    try:
        return read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None


def _lists(data: Any) -> dict[str, list[Rule]]:
    data = data if isinstance(data, dict) else {}
    return {kind: rules_from(data.get(kind)) for kind in KINDS}


class RememberedAnswers:
    """The user's answers for one workspace, in ``$PI_DAEMON_HOME/permissions.json``."""

    def __init__(self, workspace_root: Path) -> None:
        self.key = str(workspace_root.resolve())

    @property
    def file(self) -> Path:
        return home_dir() / "permissions.json"

    def _all(self) -> dict[str, Any]:
        data = _read_json(self.file)
        workspaces = data.get("workspaces") if isinstance(data, dict) else None
        return workspaces if isinstance(workspaces, dict) else {}

    def load(self) -> dict[str, list[Rule]]:
        return _lists(self._all().get(self.key))

    def add(self, kind: str, rule: Rule) -> None:
        """Remember one rule; written atomically so a crash never leaves half a file."""
        workspaces = self._all()
        section = {k: [r.to_json() for r in v] for k, v in _lists(workspaces.get(self.key)).items()}
        if rule.to_json() not in section[kind]:
            section[kind].append(rule.to_json())
        workspaces[self.key] = section
        write_json(self.file, {"workspaces": workspaces})


def workspace_rules(workspace_root: Path) -> dict[str, list[Rule]]:
    """The rules the workspace ships in ``.pi/permissions.json`` (not yet filtered by trust)."""
    return _lists(_read_json(workspace_root / ".pi" / "permissions.json"))
