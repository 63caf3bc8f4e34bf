"""Running shell commands: own process group, stdin closed, output streamed, tail kept.

The whole process group is killed on timeout, on abort, and once the command itself
has exited (so no background child outlives it). Output beyond the tail limits is
written in full to a file whose path the result gives.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import deque
from pathlib import Path
from typing import Awaitable, Callable

import attrs

from ..cancel import CancelToken

TAIL_LINES = 2000
TAIL_BYTES = 50 * 1024


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


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def run_shell(
    command: str, cwd: str, *, cancel: CancelToken, timeout: float | None,
    on_output: Callable[[str], Awaitable[None]] | None, spill_dir: Path,
) -> ShellResult:
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True,
    )
    recent: deque[bytes] = deque()
    recent_size = 0
    total = 0
    spill = None
    spill_path: Path | None = None
    head: list[bytes] = []

    async def pump() -> None:
        nonlocal recent_size, total, spill, spill_path
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            total += len(chunk)
            recent.append(chunk)
            recent_size += len(chunk)
            while recent_size - len(recent[0]) > 2 * TAIL_BYTES:
                recent_size -= len(recent.popleft())
            if spill is None and total > TAIL_BYTES:
                spill_dir.mkdir(parents=True, exist_ok=True)
                spill_path = spill_dir / f"bash-{time.strftime('%Y%m%d-%H%M%S')}-{proc.pid}.log"
                spill = open(spill_path, "wb")
                spill.write(b"".join(head))
                head.clear()
            if spill is not None:
                spill.write(chunk)
            else:
                head.append(chunk)
            if on_output is not None:
                await on_output(chunk.decode("utf-8", "replace"))

    reader = asyncio.ensure_future(pump())
    exited = asyncio.ensure_future(proc.wait())
    stopped = asyncio.ensure_future(cancel.wait())
    try:
        done, _ = await asyncio.wait({exited, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        cancelled, timed_out = stopped in done and exited not in done, not done
        if exited in done:
            await asyncio.wait({reader}, timeout=0.5)  # the rest of the output
        else:
            _kill_group(proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(asyncio.shield(exited), 0.5)
            except asyncio.TimeoutError:
                pass
    finally:
        _kill_group(proc.pid, signal.SIGKILL)  # whatever is left of the group
        if not exited.done():
            await exited
        stopped.cancel()
        if not reader.done():
            await asyncio.wait({reader}, timeout=0.5)
            reader.cancel()
        if spill is not None:
            spill.close()
    text, cut = tail(b"".join(recent).decode("utf-8", "replace") if spill else b"".join(head).decode("utf-8", "replace"))
    if cut and spill_path is None:  # too many lines for the tail, though few bytes
        spill_dir.mkdir(parents=True, exist_ok=True)
        spill_path = spill_dir / f"bash-{time.strftime('%Y%m%d-%H%M%S')}-{proc.pid}.log"
        spill_path.write_bytes(b"".join(head))
    return ShellResult(output=text, exit_code=None if (cancelled or timed_out) else proc.returncode,
                       cancelled=cancelled, timed_out=timed_out, truncated=cut or spill is not None,
                       full_output_path=str(spill_path) if spill_path else None)
