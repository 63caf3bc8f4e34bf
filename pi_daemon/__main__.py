"""``python -m pi_daemon``.

``-m`` puts the current directory first on ``sys.path``, and the daemon's current directory
is the workspace, which is not trusted yet: a ``json.py`` or ``attr.py`` there would run at
start-up in place of the real module. The directory is dropped before anything else is
imported (``daemon_command`` also starts the daemon with ``-P``, which never adds it, so
not even ``runpy``'s own imports can be shadowed).
"""

import os
import sys


def _is_current_directory(entry: str) -> bool:
    try:
        return entry == "" or entry == os.getcwd()
    except OSError:  # the directory is gone: nothing of it can be imported
        return False


if not sys.flags.safe_path and sys.path and _is_current_directory(sys.path[0]):
    del sys.path[0]

from .cli import main  # noqa: E402 - only once the workspace is off the path

raise SystemExit(main())
