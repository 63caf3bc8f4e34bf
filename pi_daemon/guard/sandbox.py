"""The sandbox of the agent's ``bash`` on Linux: bubblewrap (``bwrap``), from settings.

Inside it the whole file system is read-only except the workspace (and the extra roots
the user allowed); ``<workspace>/.pi`` (the daemon's own state) stays read-only, and so
do git's ``.git`` and top ``.gitattributes`` (:func:`.repositories.guarded_paths`: what the
user's own git obeys) unless ``gitWritable``;
``/tmp`` is a private, empty tmpfs; the ``hidden`` paths are replaced by empty ones;
with ``network`` off there is no network at all (not even loopback); the command gets
its own PID namespace, so all it starts dies with it; environment variables matching
``hideEnv`` (API keys, tokens) are not passed in. bwrap and the shell are found as
:mod:`.programs` says (never in a folder a command may write); every folder bound writable
is handed to :func:`.programs.keep_out` first. The probe that checks bwrap works runs once
per bwrap found, with the fixed environment git gets (:func:`.programs.environment`).

Settings, section ``sandbox`` of settings.json::

    {"enabled": true, "network": false, "hidden": ["~/.ssh", ...], "hideEnv": ["*_API_KEY", ...],
     "writable": ["~/.cache"], "gitWritable": false}

``enabled`` defaults to true: the sandbox is used whenever bwrap works here. When it
does not (no bwrap, no user namespaces, not Linux) commands run unconfined and
:func:`status` says so and why. The user's own commands (the ``bash`` method) are never
sandboxed.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import subprocess
from pathlib import Path
from typing import Any

import attrs

from . import programs
from .. import settings
from ..home import home_dir
from .repositories import guarded_paths

DEFAULT_HIDDEN = ("~/.ssh", "~/.aws", "~/.gnupg", "~/.azure", "~/.kube", "~/.docker", "~/.netrc",
                  "~/.config/gcloud", "~/.config/gh", "~/.git-credentials", "~/.pypirc", "~/.npmrc",
                  "$PI_DAEMON_HOME")
DEFAULT_HIDE_ENV = ("*_API_KEY", "*_TOKEN", "*_SECRET", "*_SECRET_KEY", "*PASSWORD*", "AWS_*")


@attrs.define
class SandboxStatus:
    active: bool
    network: bool
    reason: str | None = None  # why it is not active


@attrs.define
class Sandbox:
    network: bool
    hidden: list[str]
    hide_env: list[str]
    writable: list[str] = attrs.Factory(list)  # more read-write folders (e.g. ~/.cache)
    git_writable: bool = False  # the user's choice: commands may change .git/ and .gitattributes

    def wrap(self, argv: list[str], writable: list[Path]) -> list[str]:
        """``argv`` run inside bwrap, ``writable`` (the workspace first) bound read-write."""
        bound = [root for root in [*writable, *(Path(p) for p in map(_expand, self.writable) if p)]
                 if root.is_dir()]  # an extra root that is gone would stop bwrap
        programs.keep_out(bound)  # before the command can write them: no program of the daemon comes from there
        bwrap = programs.which("bwrap")
        if bwrap is None:
            raise FileNotFoundError(programs.missing("bwrap"))
        args = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        if not self.network:
            args.append("--unshare-net")
        for root in bound:
            args += ["--bind", str(root), str(root)]
        if not self.git_writable:
            for guarded in guarded_paths(bound):
                args += ["--ro-bind", guarded, guarded]
        for raw in self.hidden:
            path = _expand(raw)
            if path is None or not os.path.exists(path):
                continue
            if os.path.isdir(path):
                args += ["--tmpfs", path]
            else:
                args += ["--ro-bind", "/dev/null", path]
        state = writable[0] / ".pi"
        try:
            state.mkdir(exist_ok=True)  # so a command cannot create it either
            args += ["--ro-bind", str(state), str(state)]
        except OSError:
            pass
        return [*args, "--chdir", str(writable[0]), "--", *argv]

    def environment(self, env: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in env.items()
                if not any(fnmatch.fnmatchcase(k.upper(), p.upper()) for p in self.hide_env)}


def _expand(raw: str) -> str | None:
    value = str(home_dir()) if raw == "$PI_DAEMON_HOME" else os.path.expanduser(os.path.expandvars(raw))
    if "$" in value or not value:
        return None  # an unset variable
    return os.path.realpath(value)


def bwrap_problem() -> str | None:
    """None when bwrap can create its namespaces here, else why not."""
    path = programs.which("bwrap")
    if path is None:
        return programs.missing("bubblewrap (bwrap)")
    return _probe(path)


@functools.cache
def _probe(path: str) -> str | None:
    """Run once per bwrap found, with the fixed environment the snapshot's git gets (no API
    key reaches it), from ``/``."""
    try:
        probe = subprocess.run([path, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "true"],
                               capture_output=True, timeout=10, cwd="/", env=programs.environment(os.devnull))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap cannot run: {exc}"
    if probe.returncode != 0:
        return f"bwrap cannot create namespaces here: {probe.stderr.decode(errors='replace').strip()}"
    return None


def _section(workspace: str | Path) -> dict[str, Any]:
    section = settings.load(workspace).get("sandbox", {})
    return section if isinstance(section, dict) else {}


def _writable(section: dict[str, Any]) -> list[str]:
    """The settings' ``writable`` folders (each as given), kept out of the programs' search at
    once: a command of an earlier daemon may have written one (``~/.local/bin``), so no program
    is looked up there before the sandbox is even asked for."""
    extra = section.get("writable", [])
    folders = [str(w) for w in extra] if isinstance(extra, list) else []
    programs.keep_out(path for path in map(_expand, folders) if path)
    return folders


def keep_writable_out(settings_in_effect: dict[str, Any]) -> None:
    """What :func:`_writable` does, as the settings (``settings.load``'s) are applied."""
    section = settings_in_effect.get("sandbox", {})
    _writable(section if isinstance(section, dict) else {})


def configured(workspace: str | Path) -> Sandbox | None:
    """The sandbox the agent's commands run in, or None when it is off or unavailable."""
    section = _section(workspace)
    writable = _writable(section)
    if section.get("enabled", True) is False or bwrap_problem() is not None:
        return None
    hidden = section.get("hidden", DEFAULT_HIDDEN)
    hide_env = section.get("hideEnv", DEFAULT_HIDE_ENV)
    return Sandbox(writable=writable,
                   network=section.get("network", False) is True, git_writable=section.get("gitWritable") is True,
                   hidden=[str(h) for h in hidden] if isinstance(hidden, list) else list(DEFAULT_HIDDEN),
                   hide_env=[str(h) for h in hide_env] if isinstance(hide_env, list) else list(DEFAULT_HIDE_ENV))


_Stamp = tuple[str | tuple[int, int, int] | None, ...]


def _stamp(workspace: str | Path) -> _Stamp:
    """Changes when either settings file or the trust answers do (getState asks often; reading
    them is slower)."""
    stamps: list[tuple[int, int, int] | None] = []
    for path in (home_dir() / "settings.json", Path(workspace) / ".pi" / "settings.json",
                 home_dir() / "trust.json"):
        try:
            st = os.stat(path)
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            stamps.append(None)
    return (str(workspace), *stamps)


_last_status: list[tuple[_Stamp, SandboxStatus]] = []  # [(stamp, status)] once asked


def status(workspace: str | Path) -> SandboxStatus:
    stamp = _stamp(workspace)
    if not _last_status or _last_status[0][0] != stamp:
        _last_status[:] = [(stamp, _status(workspace))]
    return _last_status[0][1]


def _status(workspace: str | Path) -> SandboxStatus:
    section = _section(workspace)
    _writable(section)
    if section.get("enabled", True) is False:
        return SandboxStatus(active=False, network=True, reason="switched off in settings (sandbox.enabled)")
    problem = bwrap_problem()
    if problem is not None:
        return SandboxStatus(active=False, network=True, reason=problem)
    return SandboxStatus(active=True, network=section.get("network", False) is True)
