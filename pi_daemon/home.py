"""Where the user's own configuration lives: the daemon's home folder and Pi's agent folder.

A leaf: it imports nothing of the package, so every layer can ask it.
"""

from __future__ import annotations

import os
from pathlib import Path


def home_dir() -> Path:
    """``$PI_DAEMON_HOME``, else ``~/.config/pi-daemon``."""
    return Path(os.environ.get("PI_DAEMON_HOME") or Path.home() / ".config" / "pi-daemon")


def pi_agent_dir() -> Path:
    """Pi's agent directory: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``."""
    configured = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".pi" / "agent"
