"""The tool interface: name, description, JSON-Schema parameters and ``execute``.

``execute(call_id, args, cancel, on_update)`` returns a :class:`ToolResult` (or a plain
string). Raising an exception reports an error to the model; ``await on_update(partial)``
streams a partial result to observers. A tool whose ``sequential`` is true never runs
beside other calls of the same assistant message.

A tool that writes one file (``write``, ``edit``) says what a call would leave there
(``propose``, shown to the user who is asked to allow it) and, when the user accepts another
text instead, writes that one (``execute_accepted``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import attrs

from ..cancel import CancelToken
from ..llm.model import ToolSpec
from ..messages import ToolResult

ToolUpdate = Callable[[ToolResult], Awaitable[None]]


@attrs.frozen
class Proposal:
    """What a call would leave in the one file it writes: the whole text, computed by the tool's code."""
    path: Path  # resolved, confined
    text: str
    exists: bool  # the file exists now (false: the call creates it)


class Tool:
    name: str = ""
    label: str = ""
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    sequential: bool = False
    read_only: bool = False  # changes nothing: it runs in plan mode

    async def execute(
        self, call_id: str, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate
    ) -> ToolResult | str:
        raise NotImplementedError

    async def propose(self, args: dict[str, Any]) -> Proposal | None:
        """What the call would leave in its file; None for a tool that writes no one file, or a call that would fail."""
        return None

    async def execute_accepted(self, call_id: str, args: dict[str, Any], proposal: Proposal, text: str,
                               cancel: CancelToken, on_update: ToolUpdate) -> ToolResult | str:
        """Write ``text``, which the user accepted instead of ``proposal``, and tell the model so."""
        raise NotImplementedError(f"{self.name} proposes no file text")

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


class FunctionTool(Tool):
    """A tool made from an async function ``fn(args, cancel, on_update, call_id)``."""

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        fn: Callable[..., Awaitable[ToolResult | str]],
        *,
        sequential: bool = False,
        label: str = "",
    ) -> None:
        self.name = name
        self.label = label or name
        self.description = description
        self.parameters = parameters
        self.sequential = sequential
        self._fn = fn

    async def execute(
        self, call_id: str, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate
    ) -> ToolResult | str:
        return await self._fn(args, cancel=cancel, on_update=on_update, call_id=call_id)
