"""Slash commands in typed input, the same for both faces.

``prompt`` / ``steer`` / ``followUp`` (and ACP's ``session/prompt``) pass the typed text
through :func:`parse_input` first: a template or skill command is expanded (the message
keeps what was typed, :func:`command_record`), a built-in command is run here and never
reaches the model (:func:`run_builtin`), an unknown ``/name`` is an error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import attrs

from ..commands.catalog import Invocation
from ..messages import SlashCommandUse
from ..guard.modes import MODES
from ..guard.state_folders import keep_out_of_git
from ..wire.errors import AgentBusy, InvalidParams, InvalidState

if TYPE_CHECKING:
    from ..session import AgentSession
    from .host import Host

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


@attrs.define
class BuiltinDone:
    """What a built-in command did: ``value`` is the session layer's own result
    (compaction, new session, model, thinking level, exported file)."""

    name: str
    value: Any
    summary: str  # one line for a person


def parse_input(host: Host, text: str) -> Invocation:
    """What was typed: text, or a command (an unknown ``/name`` raises the catalog's UnknownCommand)."""
    return host.commands.parse(text)


def command_record(invocation: Invocation, typed: str) -> SlashCommandUse | None:
    if invocation.kind == "text":
        return None
    return SlashCommandUse(name=invocation.name, source=cast(Literal["template", "skill"], invocation.kind),
                           input=typed)


async def run_builtin(host: Host, session: AgentSession, invocation: Invocation) -> BuiltinDone:
    """Run ``/compact``, ``/new``, ``/model``, ``/thinking``, ``/mode`` or ``/export``."""
    name, args = invocation.name, invocation.args
    if name == "compact":
        if session.busy:
            raise InvalidState("/compact needs an idle session: abort the run or wait for it")
        result = await session.compact(args or None)
        if result is None:
            raise InvalidState(f"/compact did not compact: {session.compaction_said or 'see compaction_end'}")
        return BuiltinDone(name, result, f"Compacted the conversation ({result.tokens_before} tokens before).")
    if name == "new":
        created = host.sessions.create()
        return BuiltinDone(name, created, f"Started a new session: {created.id}.")
    if name == "model":
        provider, _, model_id = args.partition("/")
        if not args or not model_id:
            raise InvalidParams("/model needs provider/id, e.g. /model anthropic/claude-sonnet-4-5")
        model = await set_model(host, session, provider, model_id)
        return BuiltinDone(name, model, f"The model is now {model.spec}.")
    if name == "thinking":
        if args not in THINKING_LEVELS:
            raise InvalidParams("/thinking needs a level: " + ", ".join(THINKING_LEVELS[:-1])
                                + f" or {THINKING_LEVELS[-1]}")
        level = await session.set_thinking_level(args)
        return BuiltinDone(name, level, f"The thinking level is now {level}.")
    if name == "mode":
        if args not in MODES:
            raise InvalidParams("/mode needs a mode: " + ", ".join(MODES))
        mode = await session.set_mode(args)
        return BuiltinDone(name, mode, f"The mode is now {mode}.")
    if name == "export":
        fmt = args or "html"
        if fmt not in ("html", "markdown"):
            raise InvalidParams("/export takes html or markdown")
        target = export_session(host, session, cast(Literal["html", "markdown"], fmt))
        return BuiltinDone(name, target, f"Exported the session to {target}.")
    raise InvalidParams(f"/{name} is not a built-in command")


async def set_model(host: Host, session: AgentSession, provider: str, model_id: str, remember: bool = True) -> Any:
    """The user's choice of model (``setModel``, ``/model``, ACP's model option): the session's,
    and, when ``remember``, the user's default for new sessions and the next start."""
    if session.busy:
        raise AgentBusy("cannot change the model while a run is active")
    model = await session.set_model(provider, model_id)
    if remember:
        host.sessions.remember_default(model)
    return model


def export_session(host: Host, session: AgentSession, fmt: Literal["html", "markdown"], path: str | None = None,
                   scope: Any = "branch", allow_outside: bool = False) -> Path:
    """Write the session's history as HTML or Markdown; the file written."""
    from ..session.export import history, html_page, markdown

    title = session.name or f"Session {session.id}"
    items = history(session.store, scope)
    text = html_page(items, title) if fmt == "html" else markdown(items, title)
    target = _export_target(host.workspace, session.id, fmt, path, allow_outside)
    try:
        _write_export(target, text, allow_outside)
        if path is None:  # .pi/exports/, the daemon's own folder
            _keep_out_of_git(target.parent)
    except OSError as exc:
        raise InvalidParams(f"invalid params: params.path: cannot write {target}: {exc.strerror}") from None
    return target


def _export_target(workspace: str, session_id: str, fmt: str, path: str | None, allow_outside: bool) -> Path:
    """Where to write: inside the workspace (symlinks resolved) unless ``allow_outside``."""
    suffix = ".html" if fmt == "html" else ".md"
    root = Path(workspace).resolve()
    target = Path(path) if path else root / ".pi" / "exports" / f"{session_id}{suffix}"
    if not target.is_absolute():
        target = root / target
    real = target.parent.resolve() / target.name
    if not allow_outside and not real.is_relative_to(root):
        raise InvalidParams(f"invalid params: params.path: {target} is outside the workspace {root}; "
                            "pass allowOutside: true to write there")
    return target


def _keep_out_of_git(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:  # a symlink the workspace shipped: nothing is written through it
        return
    try:
        keep_out_of_git(fd)
    finally:
        os.close(fd)


def _write_export(target: Path, text: str, allow_outside: bool) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(target, flags, 0o644)
    try:
        if not allow_outside and os.fstat(fd).st_nlink > 1:  # a hard link would carry the write elsewhere
            raise InvalidParams(f"invalid params: params.path: {target} has other hard links; "
                                "pass allowOutside: true to overwrite it")
        os.ftruncate(fd, 0)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
