"""Process lifetime: every process a command starts dies with the command and with the daemon.

Three layers, because no single one covers every case:

* Each command runs in its own session and process group with ``PR_SET_PDEATHSIG``
  (SIGKILL) and the environment variable ``PI_DAEMON_JOBS`` naming its job. The
  variable is inherited by every descendant, ``setsid``'d and double-forked ones too,
  so a scan of ``/proc`` finds the whole tree of a job (:func:`kill_job`).
* The daemon is a child subreaper (``PR_SET_CHILD_SUBREAPER``): descendants whose
  parent exits are re-parented to it rather than to init, so they can be found (and
  reaped) while the daemon lives, even those that cleared their environment.
* A keeper process, forked first thing at start-up (:func:`start_keeper`), holds the
  read end of a pipe only the daemon writes to. When the daemon dies — SIGKILL
  included — the pipe reads EOF and the keeper kills every process still marked with
  the daemon's jobs, then exits.

A command run in the bubblewrap sandbox is in its own PID namespace as well, which
the kernel tears down with it. Without it one gap remains: a process that clears its
environment *and* detaches is found (as the subreaper's orphan) while the daemon lives,
but not by the keeper after a SIGKILL of the daemon. Linux only; elsewhere the
functions do nothing.
"""

from __future__ import annotations

import itertools
import os
import signal
from typing import Callable, Iterable, Literal
import time

ENV = "PI_DAEMON_JOBS"
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36

_token = f"{os.getpid()}.{os.urandom(4).hex()}"
_jobs = itertools.count(1)
_live: set[int] = set()  # pids of running commands (the daemon waits on those itself)

# libc's prctl (False: there is none), loaded (ctypes costs start-up time) before the first command
_prctl: Callable[..., int] | Literal[False] | None = None


def _load_prctl() -> Callable[..., int] | Literal[False]:
    global _prctl
    if _prctl is None:
        import ctypes

        try:
            prctl = ctypes.CDLL(None, use_errno=True).prctl
            prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
            _prctl = prctl
        except (OSError, AttributeError):
            _prctl = False
    return _prctl


def _set(option: int, value: int) -> None:
    if _prctl:
        _prctl(option, value, 0, 0, 0)


def die_with_parent() -> None:
    """preexec_fn of a command: SIGKILL when the daemon (its parent) dies. Async-signal-safe enough."""
    _set(_PR_SET_PDEATHSIG, signal.SIGKILL)


def become_subreaper() -> None:
    _set(_PR_SET_CHILD_SUBREAPER, 1)


def new_job() -> tuple[str, dict[str, str]]:
    """A fresh job id and the environment that marks a command (and all it starts) with it."""
    if _prctl is None and _load_prctl():
        become_subreaper()  # before the first command: its orphans come back to the daemon
    job = f"{_token}/{next(_jobs)}"
    inherited = os.environ.get(ENV)
    return job, {**os.environ, ENV: f"{inherited}:{job}" if inherited else job}


def helper_mark() -> dict[str, str]:
    """The environment entry that marks a long-lived helper process (an MCP server) as the
    daemon's, so the keeper kills it should the daemon be SIGKILLed."""
    return {ENV: new_job()[1][ENV]}


def started(pid: int) -> None:
    _live.add(pid)


def finished(pid: int) -> None:
    _live.discard(pid)


def _marks(pid: str) -> list[str] | None:
    """The job marks in a process's environment; None when it cannot be read (gone, a zombie)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return None
    for item in data.split(b"\0"):
        if item.startswith(ENV.encode() + b"="):
            return item[len(ENV) + 1:].decode("utf-8", "replace").split(":")
    return []


def _stat(pid: str) -> tuple[str, int, int] | None:
    """(state, ppid, session id) of a process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[1]), int(fields[3])


def _pids() -> list[str]:
    try:
        return [p for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]
    except OSError:
        return []


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


def _kill_until_gone(owned: Callable[[Iterable[str]], bool], rounds: int = 20) -> None:
    """SIGKILL every live process whose job marks satisfy ``owned``, until none is left
    (one forking while it is killed leaves marked children behind)."""
    for _ in range(rounds):
        found = [int(p) for p in _pids() if owned(_marks(p) or ()) and (_stat(p) or ("Z",))[0] != "Z"]
        if not found:
            return
        for pid in found:
            _kill(pid)
        time.sleep(0.002)


def kill_job(job: str, pgid: int) -> None:
    """Kill what is left of a job: its process group, every process marked with it, and the
    orphans re-parented to the daemon whose job cannot be told (their environment was cleared)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
    _kill_until_gone(lambda marks: job in marks)
    sweep_orphans()


def sweep_orphans() -> None:
    """Reap zombies re-parented to the daemon and kill re-parented orphans no live job owns.

    Only processes in another session than the daemon's are touched: commands are always
    started in a session of their own, other child processes (ripgrep) never are.
    """
    me, my_sid = os.getpid(), os.getsid(0)
    live_jobs = None
    for pid in _pids():
        info = _stat(pid)
        if info is None or info[1] != me or info[2] == my_sid or int(pid) in _live or int(pid) in _keeper:
            continue
        if info[0] != "Z":
            if live_jobs is None:
                live_jobs = {m for p in _live for m in (_marks(str(p)) or ())}
            marks = _marks(pid) or []
            if any(m in live_jobs for m in marks if m.startswith(_token)):
                continue  # belongs to a command still running
            _kill(int(pid))
        _reap(int(pid))


def kill_all() -> None:
    """Kill every process of every job of this daemon (used on the way out)."""
    for pid in list(_live):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
    _kill_until_gone(_ours)


def _ours(marks: Iterable[str]) -> bool:
    return any(m.startswith(_token + "/") for m in marks)


def start_keeper() -> None:
    """Fork the keeper that kills this daemon's jobs once the daemon is gone, however it died.

    Called before any thread starts. The keeper holds no descriptor of the daemon's but
    the pipe, so a client waiting for the daemon's stdout to close is not kept waiting.
    """
    if not os.path.isdir("/proc/self"):
        return
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid:
        _keeper.append(pid)
        os.close(read_end)
        os.set_inheritable(write_end, False)
        _keep.append(write_end)
        return
    try:
        os.setsid()  # a terminal's ^C reaches the daemon, not its keeper
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.closerange(3, read_end)
        os.closerange(read_end + 1, 65536)
        while True:
            try:
                if not os.read(read_end, 1):
                    break
            except InterruptedError:
                continue
        _kill_until_gone(_ours, rounds=50)
    finally:
        os._exit(0)


_keep: list[int] = []  # the daemon's end of the keeper's pipe, open for the daemon's life
_keeper: list[int] = []  # the keeper's pid (a child of the daemon in a session of its own)
