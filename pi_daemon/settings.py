"""``settings.json``: $PI_DAEMON_HOME's, then the workspace's ``.pi/settings.json``.

Each top-level section (``compaction``, ``permissions``, ``workspace``, ``systemPrompt``)
is merged key by key, the workspace winning. A file that cannot be read or parsed is
ignored with a warning: settings never stop the daemon.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


def home_dir() -> Path:
    return Path(os.environ.get("PI_DAEMON_HOME") or Path.home() / ".config" / "pi-daemon")


def load(workspace: str | Path) -> dict[str, dict[str, Any]]:
    merged: dict[str, dict[str, Any]] = {}
    for path in (home_dir() / "settings.json", Path(workspace) / ".pi" / "settings.json"):
        if not path.is_file():
            continue
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring %s: %s", path, exc)
            continue
        for section, values in (data.items() if isinstance(data, dict) else []):
            if isinstance(values, dict):
                merged.setdefault(section, {}).update(values)
    return merged
