"""Reading one JSON configuration file (settings, models, MCP servers, trust, permissions) safely."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import json_read
from .guard.safe_open import read_regular

MAX_CONFIG_BYTES = 4 << 20


def read_json(path: Path) -> Any:
    """The JSON of a configuration file: a regular file of at most :data:`MAX_CONFIG_BYTES`. One in
    a ``.pi`` folder (the workspace's, which a repository ships) is not followed if it is a
    symlink; the user's own may be (dotfiles). FileNotFoundError when there is none; OSError or
    ValueError saying why it cannot be used."""
    return json_read.loads(read_regular(path, MAX_CONFIG_BYTES, follow=path.parent.name != ".pi"))
