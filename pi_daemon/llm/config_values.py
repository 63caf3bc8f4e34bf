"""Values of ``apiKey`` and header fields in models.json, resolved as Pi resolves them.

A value is one of:

* ``!command`` — the command's standard output (trimmed) is the value. It runs once, the
  first time the value is needed, under a time limit; the output is cached for the life of
  the daemon and never logged. Empty output, a non-zero exit or a timeout leave the value
  unresolved (the reason says which, without the output). The programs it names are
  looked up in the folders :mod:`..guard.programs` keeps (none a workspace command can write).
* ``$NAME`` / ``${NAME}`` anywhere in the text — the environment variable; ``$$`` is a
  literal ``$`` and a leading ``$!`` a literal ``!``. An unset variable leaves the value
  unresolved.
* a bare ``UPPER_CASE_NAME`` that is set in the environment — that variable (Pi's older
  form); otherwise the text itself.
* anything else — the literal text.

A key the client hands over (``setApiKey``) is held in memory as the value of its
provider's variable (:func:`hold`, forgotten again by :func:`release`): it is read exactly as
if that variable were set, and never enters the environment the daemon's commands and servers
inherit.

Which URLs may receive an environment value is :mod:`.credentials`' business; whether a
workspace file may use a command or the environment at all is :mod:`.config`'s.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Literal, TypeGuard

from ..guard import programs

COMMAND_TIMEOUT_S = 10.0

_REFERENCE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_BARE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_held: dict[str, str] = {}


def hold(name: str, value: str) -> None:
    """Read ``$name`` as ``value`` from now on, for the daemon's life (the environment wins)."""
    _held[name] = value


def release(name: str) -> bool:
    """Forget the value :func:`hold` gave ``$name``; whether there was one."""
    return _held.pop(name, None) is not None


def source(name: str) -> Literal["environment", "client", "none"]:
    """Where ``$name``'s value comes from now: the environment wins over the client's."""
    return "environment" if os.environ.get(name) else "client" if _held.get(name) else "none"


def variable(name: str) -> str | None:
    """The value of ``$name``: the environment's, else one the client handed over."""
    return os.environ.get(name) or _held.get(name)


def is_command(spec: str | None) -> TypeGuard[str]:
    return isinstance(spec, str) and spec.startswith("!")


def env_references(spec: str | None) -> list[str]:
    """The environment variables ``spec`` reads (a bare name counts: it is read when set)."""
    if not isinstance(spec, str) or is_command(spec):
        return []
    if _BARE_NAME.fullmatch(spec):
        return [spec]
    return [m.group(1) or m.group(2) for m in _REFERENCE.finditer(spec) if m.group(1) or m.group(2)]


def reads_environment(spec: str | None) -> bool:
    """Whether ``spec`` takes its value from the environment (a bare name only when it is set)."""
    if not isinstance(spec, str) or is_command(spec):
        return False
    if _BARE_NAME.fullmatch(spec):
        return variable(spec) is not None
    return bool(env_references(spec))


def expand(spec: str | None) -> str | None:
    """The value of a non-command ``spec``; None when a variable it reads is unset or empty."""
    if spec is None or is_command(spec):
        return None
    if _BARE_NAME.fullmatch(spec):
        return variable(spec) or spec
    prefix = ""
    if spec.startswith("$!"):
        prefix, spec = "!", spec[2:]
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(2)
        if name is None:
            return "$"
        found = variable(name)
        if not found:
            missing = True
        return found or ""

    text = prefix + _REFERENCE.sub(value, spec)
    return None if missing or not text else text


class _Commands:
    """Each command's outcome, run at most once per daemon."""

    def __init__(self) -> None:
        self._runs: dict[str, asyncio.Future[tuple[str | None, str | None]]] = {}
        self.outcomes: dict[str, tuple[str | None, str | None]] = {}  # command -> (value, why not)

    async def resolve(self, command: str) -> tuple[str | None, str | None]:
        if command in self.outcomes:
            return self.outcomes[command]
        run = self._runs.get(command)
        if run is None:
            run = self._runs[command] = asyncio.ensure_future(_run(command))
        outcome = await asyncio.shield(run)
        self.outcomes[command] = outcome
        return outcome


async def _run(command: str) -> tuple[str | None, str | None]:
    label = "the apiKey/header command"
    try:
        process = await asyncio.create_subprocess_shell(  # the programs it names: never the workspace's own
            command, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PATH": programs.search_path()})
    except OSError as exc:
        return None, f"{label} could not start: {exc.strerror}"
    try:
        out, _ = await asyncio.wait_for(process.communicate(), COMMAND_TIMEOUT_S)
    except asyncio.TimeoutError:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # the shell and what it started: they hold the pipe
        except ProcessLookupError:
            pass
        await process.wait()
        return None, f"{label} did not finish within {COMMAND_TIMEOUT_S:g} s"
    if process.returncode != 0:
        return None, f"{label} failed with exit status {process.returncode}"
    value = out.decode("utf-8", "replace").strip()
    if not value:
        return None, f"{label} printed nothing"
    return value, None


commands = _Commands()


async def resolve(spec: str | None) -> tuple[str | None, str | None]:
    """``(value, why not)`` for any spec; runs a command the first time it is needed."""
    if is_command(spec):
        return await commands.resolve(spec[1:].strip())
    return expand(spec), None


def secret_failure(spec: str | None) -> str | None:
    """Why a command's value is missing, once it has run and failed."""
    if not is_command(spec):
        return None
    return (commands.outcomes.get(spec[1:].strip()) or (None, None))[1]


def resolved_now(spec: str | None) -> str | None:
    """The value without running anything: a command's only once it has run."""
    if is_command(spec):
        return (commands.outcomes.get(spec[1:].strip()) or (None, None))[0]
    return expand(spec)
