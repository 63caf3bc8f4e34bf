"""Agent events and stored messages -> ACP ``session/update`` payloads.

Live runs: text and thinking deltas become ``agent_message_chunk`` / ``agent_thought_chunk``;
a tool call the model finished writing becomes ``tool_call`` (``pending``: it may still
wait for permission); its execution becomes ``tool_call_update`` — ``in_progress`` once the
call is allowed (:meth:`LiveUpdates.running`, sent by the permission check), the bash output or a
subagent's progress (a ``task`` call: its answer so far and its tool calls) as it grows, then ``completed`` / ``failed`` with the result (``diff`` blocks
for write and edit). Replay (``session/load``) sends the same shapes from the stored
messages, user messages as ``user_message_chunk``, each tool call with its final status.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Iterator

from ..events import (MessageUpdate, PlanUpdated, TextDeltaEvent, ThinkingDeltaEvent, ToolcallEndEvent,
                      ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate)
from ..messages import ImageContent, TextContent, ThinkingContent, ToolCall

KINDS = {"read": "read", "write": "edit", "edit": "edit", "bash": "execute", "grep": "search",
         "find": "search", "ls": "search", "update_plan": "think"}


def kind_of(tool: str) -> str:
    return KINDS.get(tool, "other")


def _abs(path: Any, workspace: str) -> str | None:
    if not isinstance(path, str) or not path:
        return None
    return os.path.normpath(os.path.join(workspace, path))


def title_of(tool: str, args: dict[str, Any]) -> str:
    path = args.get("path")
    if tool == "read":
        return f"Read {path}"
    if tool in ("write", "edit"):
        return f"{'Write' if tool == 'write' else 'Edit'} {path}"
    if tool == "bash":
        return f"`{args.get('command', '')}`"
    if tool == "grep":
        return f"grep {args.get('pattern', '')!r}" + (f" in {path}" if path else "")
    if tool == "find":
        return f"find {args.get('pattern', '')!r}" + (f" in {path}" if path else "")
    if tool == "ls":
        return f"ls {path or '.'}"
    if tool == "task":  # a subagent: its progress streams in as the call's content
        what = args.get("description") or next(iter(str(args.get("prompt", "")).strip().splitlines()), "")
        return f"Subagent: {what}" if what else "Subagent"
    return tool


def locations_of(tool: str, args: dict[str, Any], workspace: str) -> list[dict[str, Any]]:
    path = _abs(args.get("path"), workspace)
    if path is None:
        return [{"path": workspace}] if tool in ("grep", "find", "ls") else []
    location: dict[str, Any] = {"path": path}
    if tool == "read" and isinstance(args.get("offset"), int):
        location["line"] = args["offset"]
    return [location]


def tool_call(call: ToolCall, workspace: str, status: str = "pending") -> dict[str, Any]:
    args = call.arguments if isinstance(call.arguments, dict) else {}
    return {"sessionUpdate": "tool_call", "toolCallId": call.id, "title": title_of(call.name, args),
            "kind": kind_of(call.name), "status": status, "locations": locations_of(call.name, args, workspace),
            "rawInput": args}


def content_block(part: Any) -> dict[str, Any] | None:
    if isinstance(part, TextContent):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImageContent):
        return {"type": "image", "data": part.data, "mimeType": part.mime_type}
    return None


def _text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    return "".join(p.text for p in parts or [] if isinstance(p, TextContent))


def diffs(tool: str, args: dict[str, Any], workspace: str) -> list[dict[str, Any]]:
    """What a ``write`` or ``edit`` call changes, as ACP ``diff`` blocks (none for other tools)."""
    path = _abs(args.get("path"), workspace)
    if path is None:
        return []
    if tool == "write" and isinstance(args.get("content"), str):
        return [{"type": "diff", "path": path, "oldText": None, "newText": args["content"]}]
    if tool == "edit" and isinstance(args.get("edits"), list):
        return [{"type": "diff", "path": path, "oldText": e.get("oldText"), "newText": e.get("newText", "")}
                for e in args["edits"] if isinstance(e, dict)]
    return []


def proposed_content(tool: str, args: dict[str, Any], workspace: str) -> list[dict[str, Any]]:
    """What a permission request shows of the call: its diffs, or the command a ``bash`` call runs."""
    if tool == "bash" and isinstance(args.get("command"), str):
        return [{"type": "content", "content": {"type": "text", "text": args["command"]}}]
    return diffs(tool, args, workspace)


def result_content(tool: str, args: dict[str, Any], parts: Any, is_error: bool,
                   workspace: str) -> list[dict[str, Any]]:
    """A finished call's content: its diffs (write, edit), then what it returned."""
    out: list[dict[str, Any]] = [] if is_error else diffs(tool, args, workspace)
    if isinstance(parts, str):
        parts = [TextContent(text=parts)]
    for part in parts or []:
        block = content_block(part)
        if block is not None and (block.get("type") != "text" or block["text"]):
            out.append({"type": "content", "content": block})
    return out


def tool_result_update(call_id: str, tool: str, args: dict[str, Any], parts: Any, is_error: bool,
                       workspace: str) -> dict[str, Any]:
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
            "status": "failed" if is_error else "completed",
            "content": result_content(tool, args, parts, is_error, workspace),
            "rawOutput": {"text": _text(parts), "isError": is_error}}


TITLE_CHARS = 80


def session_title(name: str | None, first_message: str | None) -> str | None:
    """A session's one-line title: its name, else the first line of its first prompt, shortened."""
    for text in (name, first_message):
        line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
        if line:
            line = " ".join(line.split())
            return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"
    return None


SUMMARY_HEADING = "\n\n---\n\n**Earlier conversation, summarised**\n\n"


class LiveUpdates:
    """Turns one session's live events into update payloads (``None``: nothing to send)."""

    def __init__(self, workspace: str) -> None:
        self.workspace = workspace
        self.announced: set[str] = set()
        self.args: dict[str, dict[str, Any]] = {}

    def __call__(self, event: Any) -> list[dict[str, Any]]:
        if type(event) is MessageUpdate:
            delta = event.assistant_message_event
            if isinstance(delta, TextDeltaEvent) and delta.delta:
                return [{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": delta.delta}}]
            if isinstance(delta, ThinkingDeltaEvent) and delta.delta:
                return [{"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": delta.delta}}]
            if isinstance(delta, ToolcallEndEvent):
                return [self._announce(delta.tool_call, "pending")]
            return []
        if isinstance(event, ToolExecutionStart):  # not running yet: the user may still be asked (running())
            args = event.args if isinstance(event.args, dict) else {}
            self.args[event.tool_call_id] = args
            if event.edited_by_user:  # the user edited the call before allowing it: this is what runs
                return [{"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id,
                         "title": title_of(event.tool_name, args), "rawInput": args,
                         "locations": locations_of(event.tool_name, args, self.workspace)}]
            if event.tool_call_id not in self.announced:
                return [self._announce(ToolCall(id=event.tool_call_id, name=event.tool_name, arguments=args),
                                       "pending")]
            return []
        if isinstance(event, ToolExecutionUpdate) and event.partial_result is not None:
            text = _text(event.partial_result.content)
            return [{"sessionUpdate": "tool_call_update", "toolCallId": event.tool_call_id,
                     "content": [{"type": "content", "content": {"type": "text", "text": text}}]}] if text else []
        if isinstance(event, ToolExecutionEnd):
            args = self.args.pop(event.tool_call_id, {})
            self.announced.discard(event.tool_call_id)
            return [tool_result_update(event.tool_call_id, event.tool_name, args, event.result.content,
                                       event.is_error, self.workspace)]
        if isinstance(event, PlanUpdated):
            return [plan_update(event)]
        return []

    @staticmethod
    def running(call_id: str) -> dict[str, Any]:
        """The update for a call that was allowed and runs now."""
        return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"}

    def _announce(self, call: ToolCall, status: str) -> dict[str, Any]:
        self.announced.add(call.id)
        self.args.setdefault(call.id, call.arguments if isinstance(call.arguments, dict) else {})
        return tool_call(call, self.workspace, status)


def plan_update(event: PlanUpdated) -> dict[str, Any]:
    """ACP's ``plan``: the whole plan, which replaces the one the client shows (no priorities here)."""
    return {"sessionUpdate": "plan",
            "entries": [{"content": e.step, "priority": "medium", "status": e.status} for e in event.entries]}


def replay(messages: list[Any], workspace: str) -> Iterator[dict[str, Any]]:
    """The stored conversation as update payloads, in order."""
    calls: dict[str, ToolCall] = {}
    for message in messages:
        role = getattr(message, "role", None)
        if role == "user":
            content = message.content
            for part in [TextContent(text=content)] if isinstance(content, str) else content:
                block = content_block(part)
                if block is not None:
                    yield {"sessionUpdate": "user_message_chunk", "content": block}
        elif role == "assistant":
            for part in message.content:
                if isinstance(part, ThinkingContent) and part.thinking:
                    yield {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": part.thinking}}
                elif isinstance(part, TextContent) and part.text:
                    yield {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": part.text}}
                elif isinstance(part, ToolCall):
                    calls[part.id] = part
                    yield tool_call(part, workspace)
        elif role == "toolResult":
            call = calls.pop(message.tool_call_id, None)
            args = call.arguments if call is not None and isinstance(call.arguments, dict) else {}
            yield tool_result_update(message.tool_call_id, message.tool_name, args, message.content,
                                     message.is_error, workspace)
        elif role == "bashExecution":
            yield {"sessionUpdate": "user_message_chunk",
                   "content": {"type": "text", "text": f"$ {message.command}\n{message.output}"}}
        elif role == "compactionSummary":  # its own paragraph: it follows the last answer's chunks directly
            yield {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": f"{SUMMARY_HEADING}{message.summary.strip()}\n\n---\n\n"}}
    for call_id in calls:  # calls that never got a result (an interrupted run)
        yield {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"}


COALESCE_ABOVE = 16 * 1024  # the native face's thresholds (rpc/notify.py)
HOLD_S = 0.02
CHUNKS = ("agent_message_chunk", "agent_thought_chunk")


class Coalescer:
    """Sends one session's updates; while the client is backlogged (the writer holds more
    than ``COALESCE_ABOVE`` unsent bytes) adjacent text chunks of the same kind are merged
    into one: the text is identical, the client gets fewer, larger chunks. A held chunk
    goes out with the next other update, or after ``HOLD_S`` at the latest."""

    def __init__(self, writer: Any, send: Any) -> None:
        self.writer = writer
        self.send = send
        self._held: dict[str, Any] | None = None
        self._parts: list[str] = []
        self._timer: Any = None

    def __call__(self, update: dict[str, Any]) -> None:
        kind = update["sessionUpdate"]
        if kind in CHUNKS and self.writer.backlog > COALESCE_ABOVE:
            if self._held is not None and self._held["sessionUpdate"] == kind:
                self._parts.append(update["content"]["text"])
                return
            self.flush()
            self._held, self._parts = update, [update["content"]["text"]]
            self._timer = asyncio.get_running_loop().call_later(HOLD_S, self.flush)
            return
        self.flush()
        self.send(update)

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._held is not None:
            held, self._held = self._held, None
            self.send({**held, "content": {"type": "text", "text": "".join(self._parts)}})
            self._parts = []
