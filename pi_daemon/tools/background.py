"""Background processes: commands the agent leaves running (``bash{background: true}``).

A background command is started exactly as a foreground one (:func:`.shell.spawn`: its own
session and process group, the daemon's job mark, ``PR_SET_PDEATHSIG``, the sandbox), so
:mod:`pi_daemon.procs` kills it with the daemon however the daemon ends. What differs is
who waits for it: a task of the :class:`ProcessTable` reads its output and notes its exit;
the table ends a session's processes when the session closes.

Memory stays bounded whatever a process prints: the last ``TAIL_BYTES`` in memory, the
full output in a file of ``.pi/tmp/`` up to ``SPILL_CAP`` bytes (then a note, and the rest
only counted). Nothing streams the output to clients; they ask for it (``process/output``).
"""

from __future__ import annotations

import asyncio
import io
import itertools
import logging
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal

from .. import procs
from ..events import ProcessExited, ProcessInfo, ProcessStarted
from ..guard.sandbox import Sandbox
from .shell import DRAIN_S, TAIL_BYTES as OUTPUT_LIMIT, exit_future, open_spill_file, read_chunk, spawn

log = logging.getLogger(__name__)

MAX_RUNNING = 8  # per session
TAIL_BYTES = 64 * 1024  # kept in memory per process
SPILL_CAP = 64 * 1024 * 1024  # kept on disk per process
KEEP_ENDED = 16  # ended processes a session keeps listing
FIRST_OUTPUT_S = 1.0  # how long a start waits for the first output
KILL_GRACE_S = 2.0  # between SIGTERM and SIGKILL

Announce = Callable[[str, Any], Awaitable[None]]


class TooManyProcesses(Exception):
    pass


def _now_ms() -> int:
    return int(time.time() * 1000)


class BackgroundProcess:
    """One command running in the background, its output tail and where the rest went."""

    def __init__(self, id: str, session_id: str, command: str, proc: subprocess.Popen[bytes], job: str,
                 spill: io.BufferedWriter | None, path: Path | None) -> None:
        self._exited = exit_future(proc)  # the shell's exit (its pipe may stay open in its children)
        self.id = id
        self.session_id = session_id
        self.command = command
        self.proc = proc
        self.job = job
        self.spill = spill
        self.path = path
        self.started_at = _now_ms()
        self.ended_at: int | None = None
        self.exit_code: int | None = None
        self.killed = False
        self.tail = bytearray()
        self.total = 0  # bytes of output so far
        self.spilled = 0
        self.model_read = 0  # where process_output reads from when not told
        self.first_output = asyncio.Event()
        self.ended = asyncio.Event()

    @property
    def running(self) -> bool:
        return not self.ended.is_set()

    def info(self) -> ProcessInfo:
        status: Literal["running", "exited", "killed"] = \
            "running" if self.running else ("killed" if self.killed else "exited")
        return ProcessInfo(id=self.id, session_id=self.session_id, command=self.command, pid=self.proc.pid,
                           status=status, started_at=self.started_at, output_bytes=self.total,
                           output_path=str(self.path) if self.path else "", exit_code=self.exit_code,
                           ended_at=self.ended_at)

    def _add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.tail += chunk
        if len(self.tail) > TAIL_BYTES:
            del self.tail[:len(self.tail) - TAIL_BYTES]
        if self.spill is not None:
            room = SPILL_CAP - self.spilled
            try:
                self.spill.write(chunk[:room])
                if len(chunk) >= room:
                    self.spill.write(f"\n[output beyond {SPILL_CAP // (1024 * 1024)} MB not saved]\n".encode())
                    self.spill.close()
                    self.spill = None
            except OSError as exc:
                log.warning("background process %s: its output is no longer saved: %s", self.id, exc)
                self.spill = None
            self.spilled += len(chunk)
        self.first_output.set()

    def output(self, since: int | None, limit: int = OUTPUT_LIMIT) -> tuple[str, int, bool]:
        """The output from byte ``since`` on, at most its last ``limit`` bytes: (text, the offset
        after it, whether some of it was left out)."""
        start = self.total - len(self.tail)
        since = min(max(since or 0, 0), self.total)
        data = bytes(self.tail[max(since - start, 0):])
        truncated = since < start
        if len(data) > limit:
            data, truncated = data[-limit:], True
        if truncated and b"\n" in data[:-1]:  # begin at a line's start
            data = data[data.index(b"\n") + 1:]
        return data.decode("utf-8", "replace"), self.total, truncated

    async def watch(self, announce: Announce) -> None:
        """Read the output until the command's shell exits; then end what it left behind."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        os.set_blocking(fd, False)

        async def pump() -> None:
            while chunk := await read_chunk(fd):
                self._add(chunk)
                await asyncio.sleep(0)  # a read that never waits (output without end) must not hold the loop

        reader = asyncio.ensure_future(pump())
        try:
            await asyncio.shield(self._exited)
        finally:
            procs.kill_job(self.job, self.proc.pid)
            procs.finished(self.proc.pid)
            if not reader.done():
                await asyncio.wait({reader}, timeout=DRAIN_S)
                reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            self.proc.stdout.close()
            if self.spill is not None:
                self.spill.close()
                self.spill = None
            self.exit_code, self.ended_at = self.proc.returncode, _now_ms()
            self.ended.set()
            self.first_output.set()
        await announce(self.session_id, ProcessExited(process=self.info()))

    async def stop(self) -> None:
        """SIGTERM to its process group, SIGKILL to all of its job after KILL_GRACE_S; returns once ended."""
        if not self.running:
            return
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except OSError:
            pass
        await asyncio.wait({self._exited}, timeout=KILL_GRACE_S)
        if not self._exited.done():
            procs.kill_job(self.job, self.proc.pid)
        await self.ended.wait()


class ProcessTable:
    """The daemon's background processes, by id; ``announce(session_id, event)`` tells a session's clients."""

    def __init__(self, announce: Announce | None = None) -> None:
        self.processes: dict[str, BackgroundProcess] = {}
        self.announce: Announce = announce or _nobody
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()

    def running(self, session_id: str) -> list[BackgroundProcess]:
        return [p for p in self.processes.values() if p.session_id == session_id and p.running]

    async def start(self, session_id: str, command: str, cwd: str, *, spill_dir: Path, sandbox: Sandbox | None,
                    writable: list[Path]) -> BackgroundProcess:
        """Start ``command``; returns after its first output, its exit or FIRST_OUTPUT_S."""
        running = self.running(session_id)
        if len(running) >= MAX_RUNNING:
            names = ", ".join(f"{p.id} ({p.command})" for p in running)
            raise TooManyProcesses(f"{MAX_RUNNING} background processes are running in this session, the limit; "
                                   f"stop one with process_kill first: {names}")
        id = f"p{next(self._ids)}"
        try:
            spill, path = open_spill_file(spill_dir, f"bg-{id}")
        except OSError as exc:
            log.warning("the output of background process %s is not saved in %s: %s", id, spill_dir, exc)
            spill, path = None, None
        try:
            proc, job = spawn(command, cwd, sandbox, writable)
        except BaseException:
            if spill is not None:
                spill.close()
            raise
        process = BackgroundProcess(id, session_id, command, proc, job, spill, path)
        self.processes[id] = process
        self._forget_ended(session_id)
        task = asyncio.ensure_future(process.watch(self.announce))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await self.announce(session_id, ProcessStarted(process=process.info()))
        try:
            await asyncio.wait_for(process.first_output.wait(), FIRST_OUTPUT_S)
        except TimeoutError:
            pass
        return process

    def _forget_ended(self, session_id: str) -> None:
        ended = [p for p in self.processes.values() if p.session_id == session_id and not p.running]
        for process in ended[:max(len(ended) - KEEP_ENDED, 0)]:
            del self.processes[process.id]

    def get(self, id: str) -> BackgroundProcess:
        """Raises KeyError naming the id when there is no such process."""
        try:
            return self.processes[id]
        except KeyError:
            raise KeyError(f"no background process with id {id!r}") from None

    def list(self, session_id: str | None = None) -> list[ProcessInfo]:
        return [p.info() for p in self.processes.values() if session_id is None or p.session_id == session_id]

    async def kill(self, id: str) -> ProcessInfo:
        process = self.get(id)
        await process.stop()
        return process.info()

    async def close_session(self, session_id: str) -> None:
        """End the session's processes (at once, together) and forget them."""
        mine = [p for p in self.processes.values() if p.session_id == session_id]
        await asyncio.gather(*(p.stop() for p in mine))
        for process in mine:
            self.processes.pop(process.id, None)


async def _nobody(session_id: str, event: Any) -> None:
    return None
