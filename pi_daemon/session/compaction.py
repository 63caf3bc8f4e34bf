"""Compaction: summarise the older part of a conversation so it fits the context window.

The cut walks back from the newest message until ``keep_recent_tokens`` are kept, then
moves to a valid boundary: never onto a tool result, so a tool call always stays with
its result. Everything before the cut (from the previous compaction's kept boundary
on, so what an earlier compaction kept is not lost) is summarised by the current model
with a structured prompt, the previous summary given as the starting point.

Every size is measured against what the window leaves once the system prompt and the
tools' schemas (the *overhead*, sent with every request) are in it: in a 4,096-token
window those can take half. The summary is asked for within a quarter of the messages'
share, and a compaction whose summary and kept tail would not be smaller than what they
replace is refused.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import attrs

from ..cancel import CancelToken
from ..llm.model import Context, Model, StreamOptions, ToolSpec
from ..llm.stream import stream
from ..messages import (
    AssistantMessage, CompactionSummaryMessage, ImageContent, TextContent, ToolCall, UserMessage, user_text,
)
from .rebuild import CONTEXT_TYPES, context_entries, entry_message, latest_compaction
from .store import SessionStore

SUMMARY_SYSTEM = (
    "You summarise coding-agent conversations so that the work can continue from the summary alone. "
    "Be specific: names of files, functions, commands, error messages and decisions. Do not invent anything."
)

SUMMARY_FORMAT = """Write the summary in exactly this structure (keep every heading; write "none" where empty):

## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Next Steps
## Critical Context
## Files
### Read
### Modified"""

READ_TOOLS = ("read", "grep", "find", "ls")
WRITE_TOOLS = ("write", "edit")


@attrs.define
class CompactionSettings:
    enabled: bool = True
    reserve_tokens: int = 16_384
    keep_recent_tokens: int = 20_000


class CompactionError(Exception):
    pass


def load_settings(workspace: str) -> CompactionSettings:
    """Defaults, overridden by the ``compaction`` section of settings.json."""
    from .. import settings as config

    settings = CompactionSettings()
    values = config.load(workspace).get("compaction", {})
    for key, attr in {"enabled": "enabled", "reserveTokens": "reserve_tokens", "keepRecentTokens": "keep_recent_tokens"}.items():
        if isinstance(values.get(key), type(getattr(settings, attr))):
            setattr(settings, attr, values[key])
    return settings


def estimate_tokens(message: Any) -> int:
    role = getattr(message, "role", None)
    if isinstance(message, AssistantMessage):
        chars = 0
        for block in message.content:
            if isinstance(block, TextContent):
                chars += len(block.text)
            elif isinstance(block, ToolCall):
                chars += len(block.name) + len(json.dumps(block.arguments))
            else:
                chars += len(getattr(block, "thinking", ""))
        return chars // 4 + 4
    content = getattr(message, "content", None)
    chars, images = 0, 0
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, ImageContent):
                images += 1
            else:
                chars += len(getattr(block, "text", ""))
    if role in ("compactionSummary", "branchSummary"):
        chars += len(getattr(message, "summary", ""))
    if role == "bashExecution":
        chars += len(getattr(message, "command", "")) + len(getattr(message, "output", ""))
    return chars // 4 + images * 1200 + 4


def overhead_tokens(system_prompt: str, tools: Sequence[ToolSpec]) -> int:
    """What every request carries besides the messages: the system prompt and the tools' schemas,
    each schema as a request wraps it (``{"type": "function", "function": …}`` or a template's
    equivalent), so that more tools never eat the margin the window keeps free."""
    schemas = json.dumps([{"type": "function", "function": {"name": t.name, "description": t.description,
                                                            "parameters": t.parameters}} for t in tools])
    return (len(system_prompt) + len(schemas)) // 4


def context_tokens(messages: list[Any], overhead: int = 0) -> int:
    """The last answer's reported usage plus an estimate of what came after it. An answer
    reported the context it was asked with; one older than a message before it (a
    compaction's summary) reported a context that is gone. Without a usable answer, the
    messages are estimated and ``overhead`` added."""
    newest_before, newest = [], 0
    for m in messages:
        newest_before.append(newest)
        newest = max(newest, getattr(m, "timestamp", 0) or 0)
    for n in range(len(messages) - 1, -1, -1):
        m = messages[n]
        if isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted") and m.usage.total_tokens \
                and m.timestamp >= newest_before[n]:
            u = m.usage
            return u.input + u.output + u.cache_read + u.cache_write + sum(map(estimate_tokens, messages[n + 1:]))
    return overhead + sum(map(estimate_tokens, messages))


def reserve_tokens(model: Model, settings: CompactionSettings, overhead: int = 0) -> int:
    """The room kept for the answer: at most half of what the overhead leaves of the window
    (a small local model's window may be smaller than the reserve)."""
    return min(settings.reserve_tokens, max(0, model.context_window - overhead) // 2)


def threshold(model: Model, settings: CompactionSettings, overhead: int = 0) -> int:
    """The context size past which the next request compacts first."""
    return model.context_window - reserve_tokens(model, settings, overhead)


def keep_recent_tokens(model: Model, settings: CompactionSettings, overhead: int = 0) -> int:
    """What a compaction keeps, at most a quarter of the messages' share below the threshold:
    in a 4,096-token window 20,000 would keep everything, and nothing would ever be
    compacted; with the summary (another quarter) that leaves half the share to go on in
    before the next compaction, not one turn."""
    return min(settings.keep_recent_tokens, max(0, threshold(model, settings, overhead) - overhead) // 4)


MIN_SUMMARY_TOKENS = 128  # shorter says too little to go on from
MIN_ROOM = 4 * MIN_SUMMARY_TOKENS  # what the overhead must leave of the window for compaction to make room


def summary_tokens(model: Model, settings: CompactionSettings, overhead: int = 0) -> int:
    """The summary's output limit: a quarter of the messages' share below the threshold, so
    that the summary and the kept tail (another quarter) leave room to go on; never the
    model's whole output limit, which in a small window is the window itself."""
    share = max(0, threshold(model, settings, overhead) - overhead)
    return min(model.max_tokens, 8192, max(MIN_SUMMARY_TOKENS, share // 4))


def output_limit(model: Model, context: Context) -> int | None:
    """A request's output limit: the model's, or what the window leaves for the answer when
    that is less (a server cuts the answer there, or refuses input plus limit past the
    window). None when nothing is left: the request overflows and is recovered as such.
    A thirty-second of the window is kept free: the estimates are rough, tokenizers differ."""
    used = context_tokens(context.messages, overhead_tokens(context.system_prompt, context.tools))
    room = model.context_window - used - model.context_window // 32
    return min(model.max_tokens, room) if room > 0 else None


@attrs.define
class Plan:
    summarize: list[dict[str, Any]]
    first_kept_id: str
    previous: dict[str, Any] | None
    tokens_before: int  # the context's messages, estimated
    kept_tokens: int  # of those, what the compaction keeps


def plan(store: SessionStore, keep_recent_tokens: int) -> Plan | None:
    path = store.branch()
    n = latest_compaction(path)
    previous = path[n] if n is not None else None
    start = 0
    if previous is not None and n is not None:
        kept = previous.get("firstKeptEntryId")
        start = next((i for i in range(n) if path[i].get("id") == kept), n + 1)
    candidates = [e for e in path[start:] if e.get("type") in CONTEXT_TYPES and e.get("type") != "compaction"
                  and not _failed_answer(e)]  # never sent to a model: no place to cut, nothing to keep
    messages = [entry_message(e) for e in candidates]
    kept_tokens, cut = 0, None
    for i in range(len(candidates) - 1, -1, -1):
        kept_tokens += estimate_tokens(messages[i])
        if kept_tokens >= keep_recent_tokens:
            cut = i
            break
    if cut is None:
        return None
    while cut > 0 and getattr(messages[cut], "role", None) == "toolResult":
        cut -= 1  # a tool result stays with the call that asked for it
    if cut == 0:
        return None
    first_kept = candidates[cut]["id"]
    context = context_entries(path)
    at = next(i for i, e in enumerate(context) if e.get("id") == first_kept)
    sizes = [estimate_tokens(entry_message(e)) for e in context]
    return Plan(candidates[:cut], first_kept, previous, sum(sizes), sum(sizes[at:]))


def refusal(plan_: Plan, summary: str) -> str | None:
    """Why a compaction with this summary may not be made (it would not shrink the context), or None."""
    after = estimate_tokens(CompactionSummaryMessage(summary=summary)) + plan_.kept_tokens
    if after < plan_.tokens_before:
        return None
    return (f"the compaction would not make the context smaller: its summary (~{after - plan_.kept_tokens} tokens) "
            f"and the {plan_.kept_tokens} tokens kept would replace {plan_.tokens_before}; the context is unchanged")


def _failed_answer(entry: dict[str, Any]) -> bool:
    message = entry.get("message") or {}
    return message.get("role") == "assistant" and message.get("stopReason") in ("error", "aborted")


def files_touched(entries: list[dict[str, Any]], previous: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """Files read and modified by the tool calls in ``entries``, added to ``previous``'s lists."""
    details = (previous or {}).get("details") or {}
    read, modified = set(details.get("readFiles", [])), set(details.get("modifiedFiles", []))
    for entry in entries:
        message = entry.get("message") or {}
        if message.get("role") != "assistant":
            continue
        for block in message.get("content") or []:
            path = (block.get("arguments") or {}).get("path") if block.get("type") == "toolCall" else None
            if not isinstance(path, str):
                continue
            if block.get("name") in WRITE_TOOLS:
                modified.add(path)
            elif block.get("name") in READ_TOOLS:
                read.add(path)
    return sorted(read - modified), sorted(modified)


def transcript(entries: list[dict[str, Any]]) -> str:
    lines = []
    for entry in entries:
        message = entry_message(entry)
        role = getattr(message, "role", "")
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, TextContent) and block.text:
                    lines.append(f"[Assistant]: {block.text}")
                elif isinstance(block, ToolCall):
                    lines.append(f"[Assistant called {block.name}]: {json.dumps(block.arguments)[:2000]}")
        elif role == "toolResult":
            text = user_text(message)
            flag = " (error)" if message.is_error else ""
            lines.append(f"[Result of {message.tool_name}{flag}]: {text[:2000]}{' …' if len(text) > 2000 else ''}")
        elif role in ("compactionSummary", "branchSummary"):
            lines.append(f"[Earlier summary]: {message.summary}")
        elif role == "bashExecution":
            lines.append(f"[User ran]: $ {message.command}\n{message.output[:2000]}")
        else:
            lines.append(f"[User]: {user_text(message)}")
    return "\n\n".join(lines)


async def summarize(model: Model, api_key: str | None, plan_: Plan, instructions: str | None,
                    cancel: CancelToken, max_tokens: int) -> tuple[str, Any, dict[str, Any]]:
    """``(summary, usage, details)`` from the model, asked for at most ``max_tokens`` (and no
    more than the window leaves after the request); raises CompactionError."""
    read, modified = files_touched(plan_.summarize, plan_.previous)
    parts = [f"<conversation>\n{transcript(plan_.summarize)}\n</conversation>"]
    if plan_.previous is not None:
        parts.append(f"<previous-summary>\n{plan_.previous.get('summary', '')}\n</previous-summary>\n"
                     "Update the previous summary with the conversation above; keep everything in it that still matters.")
    parts.append(SUMMARY_FORMAT)
    parts.append("Files read so far: " + (", ".join(read) or "none") + "\nFiles modified so far: "
                 + (", ".join(modified) or "none"))
    if instructions:
        parts.append(f"Focus of this summary, from the user: {instructions}")
    room = model.context_window - (len(SUMMARY_SYSTEM) + sum(map(len, parts))) // 4 - 64  # the words to come, roughly
    if room > 0:  # else the request overflows, and says so
        max_tokens = min(max_tokens, room)
    parts.append(f"Keep the whole summary under {max_tokens * 3 // 4} words.")
    text, usage = await ask(model, api_key, "\n\n".join(parts), cancel, max_tokens)
    return text, usage, {"readFiles": read, "modifiedFiles": modified}


async def ask(model: Model, api_key: str | None, prompt: str, cancel: CancelToken,
              max_tokens: int | None = None) -> tuple[str, Any]:
    """``(summary text, usage)``: the model's answer to a summary request; raises CompactionError."""
    context = Context(system_prompt=SUMMARY_SYSTEM, messages=[UserMessage(content=prompt)])
    options = StreamOptions(api_key=api_key, max_tokens=max_tokens or min(model.max_tokens, 8192))
    final = None
    async for event in stream(model, context, options, cancel):
        if event.type == "done":
            final = event.message
        elif event.type == "error":
            if event.reason == "aborted":
                raise CompactionError("aborted")
            raise CompactionError(f"the summary request failed: {event.error.error_message}")
    text = final.text().strip() if final is not None else ""
    if not text or final is None:  # no final message: no text either
        raise CompactionError("the model returned an empty summary")
    return text, final.usage
