"""The handlers of every client -> daemon method, grouped by domain.

Importing this package registers every method (see :mod:`..registry`). Each handler
takes the request context (:class:`..context.Context`: the host and the client's
declarations) and its structured params and returns its result; it raises
:mod:`pi_daemon.wire.errors` classes (or the lower layers' errors, which the host's table
translates) and never sees the transport.
"""

from . import changes, extensions, lifecycle, models, processes, runs, sessions, state  # noqa: F401 (registers the methods)
