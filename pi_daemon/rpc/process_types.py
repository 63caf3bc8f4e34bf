"""Protocol types of the background-process methods (``process/list``, ``process/output``, ``process/kill``).

Part of :mod:`.types`, which re-exports every name here. Like it, this module needs
nothing but attrs and the event classes.
"""

from __future__ import annotations

from typing import Literal

import attrs

from ..events import ProcessInfo

__all__ = [
    "ProcessInfo",
    "ProcessListParams",
    "ProcessListResult",
    "ProcessOutputParams",
    "ProcessOutputResult",
    "ProcessKillParams",
]


@attrs.define
class ProcessListParams:
    session_id: str | None = None  # absent: every session's


@attrs.define
class ProcessListResult:
    processes: list[ProcessInfo]


@attrs.define
class ProcessOutputParams:
    id: str
    since: int | None = None  # a byte offset of the output (absent: 0)


@attrs.define
class ProcessOutputResult:
    text: str
    next: int  # the offset to ask from next time (the output's length now)
    status: Literal["running", "exited", "killed"]
    truncated: bool  # output since `since` was left out (older than the kept tail, or past the limit)
    exit_code: int | None = None


@attrs.define
class ProcessKillParams:
    id: str
