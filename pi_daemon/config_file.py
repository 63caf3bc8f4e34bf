"""Reading one JSON configuration file (settings, models, MCP servers, trust, permissions) safely, and
writing one of the user's own (``$PI_DAEMON_HOME``'s) atomically."""

from __future__ import annotations

import json
import os
import tempfile
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


def write_json(path: Path, data: Any) -> None:
    """Replace the user's file ``path`` with ``data`` at once (a reader sees the old file or the new
    one); a symlink (dotfiles) is written through, not replaced. OSError when it cannot be written."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=2)
            file.write("\n")
        os.replace(temporary, target)
    except BaseException:
        os.unlink(temporary)
        raise
