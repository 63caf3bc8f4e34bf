"""The handlers of every client -> daemon method, grouped by domain.

Importing this package registers every method (see :mod:`..registry`). Each handler
takes the daemon's composition root and its structured params and returns its result;
it raises :mod:`..errors` classes (or the session layer's errors, which the dispatcher
translates) and never sees JSON-RPC framing or pygls.

These modules are imported by the ``initialize`` fast path, before the session layer
has loaded: they import the session layer's modules inside the handlers that need them.
"""

from . import changes, extensions, lifecycle, models, runs, sessions, state  # noqa: F401 (registers the methods)
