"""The handlers of every client -> daemon method, grouped by domain, and the table saying where each is.

:data:`MODULES` is the method table as data: each module of this package and the methods whose
handlers it declares (with :func:`..registry.method`). The connection serves a method by importing
its module on the method's first call (:func:`load`), so answering ``initialize`` imports
``lifecycle`` only, not the session, model and tool layers every other handler stands on.
:func:`load_all` imports every module (the schema, the client's typed results, the tests).

Each handler takes the request context (:class:`..context.Context`: the host and the client's
declarations) and its structured params and returns its result; it raises
:mod:`pi_daemon.wire.errors` classes (or the lower layers' errors, which the host's table
translates) and never sees the transport.
"""

from __future__ import annotations

from typing import Any

from ..initialize_names import NOTIFICATION_NAMES
from ..registry import METHODS, MethodSpec

MODULES: dict[str, tuple[str, ...]] = {
    "changes": ("changes/accept", "changes/get", "changes/revert", "fs/didChangeDirty"),
    "extensions": ("getCommands", "listTools"),
    "lifecycle": ("initialize", "shutdown", "exit"),
    "models": ("addModelServer", "listModels", "modelAccess", "probeLocalServers", "removeApiKey",
               "removeModelServer", "setApiKey", "setModel", "setThinkingLevel"),
    "processes": ("process/kill", "process/list", "process/output"),
    "runs": ("abort", "abortBash", "bash", "clearQueue", "continue", "followUp", "prompt", "removeQueued", "steer",
             "waitForIdle"),
    "sessions": ("session/clone", "session/close", "session/delete", "session/entries", "session/export",
                 "session/fork", "session/label", "session/list", "session/load", "session/navigate",
                 "session/new", "session/rewind", "session/search", "session/setName", "session/stats",
                 "session/tree"),
    "state": ("compact", "getMessages", "getState", "setAutoCompaction", "setAutoRetry", "setMode",
              "setQueueModes"),
}

HANDLER_MODULES: dict[str, str] = {name: f"{__name__}.{module}" for module, names in MODULES.items()
                                   for name in names}
"""Method name -> the module that declares its handler."""


def served() -> dict[str, bool]:
    """Every method a connection serves -> whether it is a request (else a notification): the
    table's, and any declared in this process outside it (a test's throwaway method)."""
    names = {name: name not in NOTIFICATION_NAMES for name in HANDLER_MODULES}
    return names | {name: spec.is_request for name, spec in METHODS.items()}


BEFORE_THE_HOST = frozenset({"initialize"})
"""Served without the host: a plain stdio daemon opens its host once ``initialize`` is answered
(every other method waits for it; see :meth:`..hub.Hub.opened`)."""


def load(name: str) -> MethodSpec[Any, Any]:
    """The declaration of ``name``, its handler's module imported on the first call."""
    spec = METHODS.get(name)
    if spec is None:
        _import(HANDLER_MODULES[name])
        spec = METHODS[name]
    return spec


def load_all() -> None:
    """Import every handler module: every method is declared."""
    for module in MODULES:
        _import(f"{__name__}.{module}")


def _import(module: str) -> None:
    # The import statement's machinery (not importlib.import_module, which -X importtime does not
    # see): a handler module's import shows in a profile of the start like any other.
    __import__(module)
