"""Running shell commands: own session, stdin closed, output streamed, a bounded tail kept.

A command is finished when its shell exits, not when every process that inherited its
output pipe has closed it: at that moment whatever the command left running in the
background (its process group, and everything marked with its job, ``setsid``'d
children included — see :mod:`.procs`) is killed, the output still in the pipe is read,
and the result is returned. On timeout or abort the process group gets SIGTERM, then
after a short grace the whole job gets SIGKILL.

Memory stays bounded whatever the command prints: only the last ``2 * TAIL_BYTES`` are
kept; beyond ``TAIL_BYTES`` the full output is written to a file in the spill folder
(``<workspace>/.pi/tmp``), whose path the result gives. :func:`clean_spill` bounds that
folder: files older than a day go, then the oldest until it holds at most 512 MB.
"""

from __future__ import annotations

import asyncio
import codecs
import io
import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Awaitable, Callable

import attrs

from ..cancel import CancelToken
from .. import procs
from ..guard import programs
from ..guard.safe_open import open_beneath, open_root
from ..guard.sandbox import Sandbox
from ..guard.state_folders import keep_out_of_git

log = logging.getLogger(__name__)

TAIL_LINES = 2000
TAIL_BYTES = 50 * 1024
SPILL_MAX_AGE_S = 24 * 3600
SPILL_MAX_BYTES = 512 * 1024 * 1024
GRACE_S = 0.5  # between SIGTERM and SIGKILL on abort / timeout
DRAIN_S = 1.0  # reading what is left in the pipe once the command is over


@attrs.define
class ShellResult:
    output: str
    exit_code: int | None
    cancelled: bool = False
    timed_out: bool = False
    truncated: bool = False
    full_output_path: str | None = None


def tail(text: str) -> tuple[str, bool]:
    """The last TAIL_LINES lines / TAIL_BYTES bytes of ``text``; True when something was cut."""
    cut = False
    data = text.encode("utf-8")
    if len(data) > TAIL_BYTES:
        text, cut = data[-TAIL_BYTES:].decode("utf-8", "ignore"), True
        text = text.split("\n", 1)[1] if "\n" in text else text
    lines = text.split("\n")
    if len(lines) > TAIL_LINES:
        text, cut = "\n".join(lines[-TAIL_LINES:]), True
    return text, cut


class OutputBuffer:
    """A command's output: the recent tail in memory, everything in a spill file once large."""

    def __init__(self, spill_dir: Path, name: str) -> None:
        self.spill_dir = spill_dir
        self.name = name
        self.total = 0
        self.head: list[bytes] = []  # all of it, while it is small
        self.recent: deque[bytes] = deque()
        self.recent_size = 0
        self.spill: io.BufferedWriter | None = None
        self.spill_path: Path | None = None
        self.not_saved = False  # the spill file could not be made: only the tail is kept

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self.recent.append(chunk)
        self.recent_size += len(chunk)
        while self.recent_size - len(self.recent[0]) > 2 * TAIL_BYTES:
            self.recent_size -= len(self.recent.popleft())
        if self.spill is None and self.total > TAIL_BYTES and not self.not_saved:
            self.spill = self._try_spill()
            if self.spill is not None:
                self.spill.write(b"".join(self.head))
            self.head.clear()
        if self.spill is not None:
            self.spill.write(chunk)
        elif not self.not_saved:
            self.head.append(chunk)

    def _try_spill(self) -> io.BufferedWriter | None:
        try:
            return self._open_spill()
        except OSError as exc:
            self.not_saved = True
            log.warning("the full output of a command is not saved in %s: %s", self.spill_dir, exc.strerror or exc)
            return None

    def _open_spill(self) -> io.BufferedWriter:
        spill, self.spill_path = open_spill_file(self.spill_dir, self.name)
        return spill

    def finish(self) -> tuple[str, bool, str | None]:
        """(the tail as text, whether anything was cut, the full output's file if any)."""
        if self.spill is not None:
            self.spill.close()
        kept = b"".join(self.recent if self.spill_path or self.not_saved else self.head)
        text, cut = tail(kept.decode("utf-8", "replace"))
        if cut and self.spill_path is None and not self.not_saved:  # too many lines for the tail, though few bytes
            spill = self._try_spill()
            if spill is not None:
                with spill:
                    spill.write(kept)
        cut = cut or self.spill_path is not None or self.not_saved
        return text, cut, str(self.spill_path) if self.spill_path else None


def open_spill_file(spill_dir: Path, name: str) -> tuple[io.BufferedWriter, Path]:
    """A new file for a command's output in the spill folder, which comes with the workspace: the
    folder and the file are opened with no symlink followed (one shipped pointing elsewhere is an error)."""
    file_name = f"bash-{time.strftime('%Y%m%d-%H%M%S')}-{name}.log"
    spill_dir.parent.mkdir(parents=True, exist_ok=True)
    root = open_root(spill_dir.parent)
    try:
        fd = open_beneath(root, [spill_dir.name, file_name], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644,
                          make_parents=True)
        try:
            folder = open_beneath(root, [spill_dir.name], os.O_RDONLY | os.O_DIRECTORY)
            try:
                keep_out_of_git(folder)
            finally:
                os.close(folder)
        except BaseException:
            os.close(fd)
            raise
    finally:
        os.close(root)
    return open(fd, "wb"), spill_dir / file_name


def clean_spill(folder: Path, max_age_s: float = SPILL_MAX_AGE_S, max_bytes: int = SPILL_MAX_BYTES) -> None:
    """Remove spilled outputs (``bash-*.log``) older than ``max_age_s``, then the oldest of the
    rest until they total at most ``max_bytes``. Run at start-up and when sessions close."""
    try:  # never through a symlink: a repository's .pi/tmp pointing elsewhere would have its files pruned
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        files = [(e.stat(follow_symlinks=False).st_mtime, e.stat(follow_symlinks=False).st_size, e.name)
                 for e in os.scandir(dir_fd)
                 if e.name.startswith("bash-") and e.name.endswith(".log") and e.is_file(follow_symlinks=False)]
        files.sort(reverse=True)  # newest first
        now, kept = time.time(), 0
        for mtime, size, name in files:
            kept += size
            if now - mtime > max_age_s or kept > max_bytes:
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except OSError:
                    pass
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def spawn(command: str, cwd: str, sandbox: Sandbox | None,
           writable: list[Path]) -> tuple[subprocess.Popen[bytes], str]:
    shell = programs.which("bash")  # never the workspace's own bash; the command itself sees the user's PATH
    if shell is None:
        raise FileNotFoundError(programs.missing("bash"))
    job, env = procs.new_job()
    argv = [shell, "-c", command]
    if sandbox is not None:
        argv, env = sandbox.wrap(argv, writable or [Path(cwd)]), sandbox.environment(env)
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=procs.die_with_parent)
    procs.started(proc.pid)
    return proc, job


def exit_future(proc: subprocess.Popen[bytes]) -> asyncio.Future[int]:
    """Resolves when the shell itself exits (its pipe may stay open in its children)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[int] = loop.create_future()

    def resolve() -> None:
        if not future.done():
            future.set_result(proc.returncode)

    def wait() -> None:
        proc.wait()
        loop.call_soon_threadsafe(resolve)

    threading.Thread(target=wait, name=f"wait-{proc.pid}", daemon=True).start()
    return future


async def read_chunk(fd: int) -> bytes:
    loop = asyncio.get_running_loop()
    while True:
        try:
            return os.read(fd, 65536)
        except BlockingIOError:
            ready: asyncio.Future[None] = loop.create_future()

            def wake() -> None:
                if not ready.done():
                    ready.set_result(None)

            loop.add_reader(fd, wake)
            try:
                await ready
            finally:
                loop.remove_reader(fd)


async def run_shell(
    command: str, cwd: str, *, cancel: CancelToken, timeout: float | None,
    on_output: Callable[[str], Awaitable[None]] | None, spill_dir: Path,
    sandbox: Sandbox | None = None, writable: list[Path] | None = None,
) -> ShellResult:
    proc, job = spawn(command, cwd, sandbox, writable or [])
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    buffer = OutputBuffer(spill_dir, str(proc.pid))
    decoder = codecs.getincrementaldecoder("utf-8")("replace")

    async def pump() -> None:
        while chunk := await read_chunk(fd):
            buffer.add(chunk)
            if on_output is not None:
                text = decoder.decode(chunk)
                if text:
                    await on_output(text)

    reader = asyncio.ensure_future(pump())
    exited = exit_future(proc)
    stopped = asyncio.ensure_future(cancel.wait())
    try:
        either: set[asyncio.Future[Any]] = {exited, stopped}
        done, _ = await asyncio.wait(either, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        cancelled, timed_out = stopped in done and exited not in done, not done
        if exited not in done:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except OSError:
                pass
            await asyncio.wait({exited}, timeout=GRACE_S)
    finally:
        procs.kill_job(job, proc.pid)  # whatever the command left behind, wherever it went
        if not exited.done():
            await asyncio.shield(exited)
        procs.finished(proc.pid)
        stopped.cancel()
        if not reader.done():
            await asyncio.wait({reader}, timeout=DRAIN_S)
            reader.cancel()  # a process the kill could not reach still holds the pipe
        await asyncio.gather(reader, return_exceptions=True)
        proc.stdout.close()
    if on_output is not None and (rest := decoder.decode(b"", final=True)):
        await on_output(rest)
    text, cut, path = buffer.finish()
    return ShellResult(output=text, exit_code=None if (cancelled or timed_out) else proc.returncode,
                       cancelled=cancelled, timed_out=timed_out, truncated=cut, full_output_path=path)
