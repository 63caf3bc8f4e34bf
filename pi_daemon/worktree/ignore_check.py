"""Which folders git's ignore rules leave out, asked a level at a time of one git for a whole walk.

A walk asks, for each level, which of the folders it found are ignored (so it never enters
``node_modules``). One ``git check-ignore --stdin --verbose --non-matching -z`` (isolated:
:mod:`.git_isolated`) answers every level of the walk, a record per name: a process per level
would cost a start and a read of every ``.gitignore`` from the top each time, which grows with
the depth. It has the time limit of one git run for
the whole walk; when git fails or runs out of time, nothing more counts as ignored (as when
the one-shot question fails).
"""

from __future__ import annotations

import os
import select
import subprocess
import threading
import time
from typing import IO

from .git_isolated import RUN_SECONDS, GitRunError, IsolatedGit

FIELDS = 4  # source, line number, pattern, path; the source is empty for a name no pattern matches


class IgnoreCheck:
    """``ask(names)``: which of ``names`` (relative to ``cwd``) git ignores. Close it (a ``with``)."""

    def __init__(self, git: IsolatedGit | None, cwd: str) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.deadline = time.monotonic() + RUN_SECONDS
        self.pending = b""
        if git is not None:
            try:
                self.proc = git.start("check-ignore", "--no-index", "--stdin", "--verbose", "--non-matching", "-z",
                                      cwd=cwd)
            except GitRunError:
                pass

    def __call__(self, names: list[str]) -> set[str]:
        proc = self.proc
        if proc is None or not names:
            return set()
        assert proc.stdin is not None and proc.stdout is not None
        data = b"".join(os.fsencode(name) + b"\0" for name in names)
        writer = threading.Thread(target=self._write, args=(proc.stdin, data), daemon=True)  # git answers as it reads
        writer.start()
        fields: list[bytes] = []
        while len(fields) < FIELDS * len(names):
            chunk = self._read(proc.stdout.fileno())
            if not chunk:
                self.close()
                return set()
            *done, self.pending = (self.pending + chunk).split(b"\0")
            fields += done
        writer.join()
        return {os.fsdecode(path) for source, _, pattern, path in zip(*[iter(fields)] * FIELDS)
                if source and not pattern.startswith(b"!")}

    def _read(self, fd: int) -> bytes:
        left = self.deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return b""
        return os.read(fd, 1 << 16)

    @staticmethod
    def _write(stdin: IO[bytes], data: bytes) -> None:
        try:
            stdin.write(data)
            stdin.flush()
        except (OSError, ValueError):
            pass  # git is gone: the reader sees its output end

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.kill()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        proc.wait()

    def __enter__(self) -> IgnoreCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
