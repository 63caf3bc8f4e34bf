"""Shared by the bench scripts."""

from __future__ import annotations

import compileall
import subprocess
import sys
from pathlib import Path

import pi_daemon


def precompile() -> None:
    """Measure an installed daemon: ``pip install .`` writes bytecode, an editable install
    under PYTHONDONTWRITEBYTECODE would recompile every module at every start."""
    compileall.compile_dir(str(Path(pi_daemon.__file__).parent), quiet=1)
