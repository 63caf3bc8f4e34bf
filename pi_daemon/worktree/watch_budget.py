"""The inotify watches all of the user's daemons may hold together, shared through a ledger.

The kernel's limit of watches (``fs.inotify.max_user_watches``) is the user's, shared by
every program the user runs: the editors watch their folders with it too. So the daemons of
one user together hold at most :data:`SHARE` of it (half), or ``PI_DAEMON_INOTIFY_WATCHES``
when that is lower; the rest stays the editors'. Each daemon notes what it holds in a ledger,
``$PI_DAEMON_HOME/inotify-watches.json`` (process id and start time -> watches), read and
written under an exclusive ``fcntl`` lock of ``inotify-watches.lock`` beside it; an entry
whose process is gone (a killed daemon) is dropped by the next daemon that asks, so its share
is free again. A daemon asks for watches in blocks as it walks and gives back what it does not
use once a walk is done; a watch that cannot get its watches from the budget is given up, and
that work tree's changes are found by reading it in full (:mod:`.watched_snapshot`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
from collections.abc import Callable

from ..home import home_dir

log = logging.getLogger(__name__)

SHARE = 2  # all daemons of the user together: at most half the user's watches
LOWER = "PI_DAEMON_INOTIFY_WATCHES"  # the environment variable that lowers that total
LEDGER = "inotify-watches.json"
MAX_LEDGER_BYTES = 1 << 20


def user_watch_limit() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 8192  # the kernel's old default


def total() -> int:
    """The most watches all of the user's daemons hold together."""
    most = user_watch_limit() // SHARE
    lowered = os.environ.get(LOWER, "")
    return min(most, int(lowered)) if lowered.isdigit() else most


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks after boot): with the id, it names one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[19].decode()
    except (OSError, IndexError):
        return None


class Budget:
    """This daemon's share: :meth:`reserve` and :meth:`release` keep the ledger up to date."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.held = 0
        self.me = f"{os.getpid()}:{_started(os.getpid())}"

    def reserve(self, want: int) -> int:
        """Up to ``want`` more watches: what the other daemons leave (0 when none is left)."""
        with self.lock:
            got = self._change(lambda others: max(0, min(want, total() - others - self.held)))
            self.held += got
            return got

    def release(self, count: int) -> None:
        with self.lock:
            count = min(count, self.held)
            if count > 0:
                self._change(lambda others: -count)
                self.held -= count

    def _change(self, by: Callable[[int], int]) -> int:
        """Apply ``by(watches the other live daemons hold)`` to this daemon's entry, under the lock."""
        folder = home_dir()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            lock = os.open(folder / "inotify-watches.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                           0o600)
        except OSError as exc:  # no ledger: this daemon keeps within the total by itself
            log.info("the inotify ledger in %s cannot be used: %s", folder, exc)
            return by(0)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            entries = {key: n for key, n in self._read(folder).items() if key == self.me or _alive(key)}
            delta = (by(sum(n for key, n in entries.items() if key != self.me)))
            entries[self.me] = self.held + delta
            if entries[self.me] <= 0:
                del entries[self.me]
            temporary = folder / f".{LEDGER}.{os.getpid()}"
            temporary.write_text(json.dumps(entries))
            os.replace(temporary, folder / LEDGER)
            return delta
        except OSError as exc:
            log.info("the inotify ledger in %s cannot be written: %s", folder, exc)
            return by(0)
        finally:
            os.close(lock)  # and the lock with it

    @staticmethod
    def _read(folder: os.PathLike[str]) -> dict[str, int]:
        try:
            fd = os.open(os.path.join(folder, LEDGER), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            with os.fdopen(fd, "rb") as f:
                found = json.loads(f.read(MAX_LEDGER_BYTES))
        except (OSError, ValueError):
            return {}  # none yet, or damaged: the daemons that are running write theirs again
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, int) and v > 0}


def _alive(key: str) -> bool:
    pid, _, started = key.partition(":")
    return pid.isdigit() and _started(int(pid)) == started


budget = Budget()
