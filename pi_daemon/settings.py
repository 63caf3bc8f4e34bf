"""``settings.json``: $PI_DAEMON_HOME's, then the workspace's ``.pi/settings.json``.

Each top-level section (``compaction``, ``permissions``, ``workspace``, ``sandbox``,
``systemPrompt``, ``diagnostics``, ``subagents``) is merged key by key, the workspace winning — once the user has
trusted the workspace (:mod:`.trust`). Until then a workspace may only make things
stricter; every field it sets that would lower a protection is left out and reported
(:class:`Ignored`):

* ``permissions.ask`` — only the tools it adds are asked about; it cannot remove one;
* ``permissions.withoutClient`` — only ``"reject"`` is taken;
* ``subagents.enabled`` — only ``false`` is taken (the ``task`` tool is how a model reaches
  another model; a workspace cannot give it back when the user switched it off);
* any other ``permissions`` field, all of ``workspace`` (``extraRoots`` widens the
  confinement), all of ``sandbox``, and any section this daemon does not know.

``compaction``, ``systemPrompt`` and ``diagnostics`` apply either way (they change no
protection; the workspace's own ``AGENTS.md`` is read either way too). A file that cannot be read or
parsed is ignored with a warning: settings never stop the daemon.

The user's own file also keeps the model they chose last, as Pi does: top-level
``defaultProvider`` and ``defaultModel`` (:func:`default_model`), written by the daemon when the
user chooses a model (:func:`remember_model`, the rest of the file kept). A workspace's file
cannot set them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import attrs

from .config_file import read_json, write_json
from .home import home_dir
from .guard.permission_rules import ASK_DEFAULT

log = logging.getLogger(__name__)

HARMLESS_SECTIONS = ("compaction", "systemPrompt", "diagnostics")


@attrs.frozen
class Ignored:
    """A workspace configuration field left out until the workspace is trusted."""

    file: str
    field: str
    effect: str


@attrs.define
class Layered:
    values: dict[str, dict[str, Any]]
    ignored: list[Ignored]


def _read(path: Path) -> dict[str, dict[str, Any]]:
    if not os.path.lexists(path):
        return {}
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def _untrusted(section: str, values: dict[str, Any], base: dict[str, Any], file: str,
               ignored: list[Ignored]) -> dict[str, Any]:
    """What an untrusted workspace's ``section`` may change: only what makes things stricter."""
    if section in HARMLESS_SECTIONS:
        return values
    if section == "subagents":
        off: dict[str, Any] = {"enabled": False} if values.get("enabled") is False else {}
        for key, value in values.items():
            if key == "enabled" and value != base.get("enabled", True) and value is not False:
                ignored.append(Ignored(file, "subagents.enabled", "would give the agent the task tool the user "
                                                                  "switched off"))
            elif key != "enabled":
                ignored.append(Ignored(file, f"subagents.{key}", "is not applied until the workspace is trusted"))
        return off
    if section != "permissions":
        effect = {"workspace": "would let the agent's tools reach folders outside the workspace",
                  "sandbox": "could loosen the sandbox the agent's bash runs in"}.get(
            section, "is not applied until the workspace is trusted")
        ignored.extend(Ignored(file, f"{section}.{key}", effect) for key in values)
        return {}
    kept: dict[str, Any] = {}
    for key, value in values.items():
        field = f"permissions.{key}"
        if key == "ask" and isinstance(value, list):
            current = list(base.get("ask", ASK_DEFAULT))
            removed = [tool for tool in current if tool not in value]
            if removed:
                ignored.append(Ignored(file, field, f"would run {', '.join(removed)} without asking"))
            kept["ask"] = current + [tool for tool in value if tool not in current]
        elif key == "withoutClient" and value == "reject":
            kept[key] = value
        elif key == "withoutClient":
            if value != base.get(key):
                ignored.append(Ignored(file, field, f"would {value} tool calls nobody can be asked about"))
        else:
            ignored.append(Ignored(file, field, "could lower the permission checks"))
    return kept


def layered(workspace: str | Path, trusted: bool | None = None) -> Layered:
    """The merged settings and what was left out; ``trusted`` None asks :mod:`.trust`."""
    from .guard import trust

    if trusted is None:
        trusted = trust.is_trusted(workspace)
    merged: dict[str, dict[str, Any]] = {}
    for section, values in _read(home_dir() / "settings.json").items():
        merged[section] = dict(values)
    ignored: list[Ignored] = []
    path = Path(workspace) / ".pi" / "settings.json"
    for section, values in _read(path).items():
        if not trusted:
            values = _untrusted(section, values, merged.get(section, {}), str(path), ignored)
        if values:
            merged.setdefault(section, {}).update(values)
    return Layered(merged, ignored)


def user_settings() -> dict[str, dict[str, Any]]:
    """The user's own settings.json alone, for what a workspace must never set (the server's idle timeout)."""
    return _read(home_dir() / "settings.json")


def load(workspace: str | Path) -> dict[str, dict[str, Any]]:
    """The settings in effect for this workspace (trusted or not, see the module text)."""
    return layered(workspace).values


def default_model() -> tuple[str, str] | None:
    """The user's default model, ``(provider, id)``, from their settings.json; None when unset."""
    path = home_dir() / "settings.json"
    try:
        data = read_json(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return None
    provider, model = (data.get("defaultProvider"), data.get("defaultModel")) if isinstance(data, dict) else (0, 0)
    return (provider, model) if isinstance(provider, str) and isinstance(model, str) and provider and model else None


def remember_model(provider: str, model_id: str) -> None:
    """Make ``provider/model_id`` the user's default model in their settings.json (kept as it is
    otherwise; a file that cannot be read is left alone, with a warning)."""
    path = home_dir() / "settings.json"
    try:
        data = read_json(path)
    except FileNotFoundError:
        data = {}
    except (OSError, ValueError) as exc:
        log.warning("the chosen model is not remembered: %s cannot be read (%s)", path, exc)
        return
    if not isinstance(data, dict):
        log.warning("the chosen model is not remembered: %s is not a JSON object", path)
        return
    if data.get("defaultProvider") == provider and data.get("defaultModel") == model_id:
        return
    data.update(defaultProvider=provider, defaultModel=model_id)
    try:
        write_json(path, data)
    except OSError as exc:
        log.warning("the chosen model is not remembered: %s could not be written (%s)", path, exc)
