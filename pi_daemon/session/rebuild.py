"""What a session file means: its context, settings, queue, and whether a run was cut off.

The model context is rebuilt by walking from the leaf to the root. With a compaction
on the path, its summary comes first, then the kept entries from ``firstKeptEntryId``,
then everything after the compaction. An entry whose message cannot be read (a wrongly
typed field) is set aside in the store rather than failing the whole session.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import cattrs

from ..messages import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ToolResultMessage,
    message_from_wire,
)
from .store import SessionStore

CONTEXT_TYPES = ("message", "custom_message", "branch_summary", "compaction")


def latest_compaction(path: list[dict[str, Any]]) -> int | None:
    for n in range(len(path) - 1, -1, -1):
        if path[n].get("type") == "compaction":
            return n
    return None


def context_entries(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of ``path`` that make up the model context, in order."""
    n = latest_compaction(path)
    if n is None:
        return [e for e in path if e.get("type") in CONTEXT_TYPES]
    compaction = path[n]
    kept_from = next((i for i in range(n) if path[i].get("id") == compaction.get("firstKeptEntryId")), n)
    kept = [e for e in path[kept_from:n] if e.get("type") in CONTEXT_TYPES and e.get("type") != "compaction"]
    after = [e for e in path[n + 1:] if e.get("type") in CONTEXT_TYPES]
    return [compaction, *kept, *after]


def entry_message(entry: dict[str, Any]) -> Any:
    kind = entry.get("type")
    if kind == "message":
        return message_from_wire(entry.get("message") or {})
    if kind == "compaction":
        return CompactionSummaryMessage(summary=entry.get("summary", ""), tokens_before=entry.get("tokensBefore", 0),
                                        timestamp=_ms(entry))
    if kind == "branch_summary":
        return BranchSummaryMessage(summary=entry.get("summary", ""), from_id=entry.get("fromId"), timestamp=_ms(entry))
    if kind == "custom_message":
        return message_from_wire({"role": "custom", "customType": entry.get("customType", ""),
                                  "content": entry.get("content", ""), "display": entry.get("display", True),
                                  "details": entry.get("details"), "timestamp": _ms(entry)})
    raise ValueError(f"entry type {kind!r} holds no message")


def _ms(entry: dict[str, Any]) -> int:
    try:
        stamp = dt.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00"))
        return int(stamp.timestamp() * 1000)
    except (KeyError, ValueError, AttributeError):
        return 0


def unreadable(exc: Exception) -> str:
    """Why a stored message could not be read, in one line that names the field."""
    if isinstance(exc, cattrs.BaseValidationError):
        return "unreadable message: " + "; ".join(cattrs.transform_error(exc, path="message"))
    return f"unreadable message: {exc}"


def readable_message(entry: dict[str, Any]) -> tuple[Any, str | None]:
    """``(message, None)``, or ``(None, reason)`` when the entry's message cannot be read."""
    try:
        return entry_message(entry), None
    except Exception as exc:  # noqa: BLE001 - any structuring failure means the entry is unusable
        return None, unreadable(exc)


def context_messages(store: SessionStore, branch: list[dict[str, Any]] | None = None) -> list[Any]:
    """The messages of the branch; entries whose message cannot be read are set aside."""
    messages, bad = [], []
    known = store.messages
    for entry in context_entries(branch if branch is not None else store.branch()):
        message = known.get(entry["id"])
        if message is None:
            message, reason = readable_message(entry)
            if reason is not None:
                bad.append((entry, reason))
                continue
            known[entry["id"]] = message
        messages.append(message)
    if bad:
        store.set_aside(bad)
    return messages


def branch_message(store: SessionStore, entry: dict[str, Any]) -> tuple[Any, str | None]:
    """:func:`readable_message` for an entry of the store's context: the message read when the
    context was (:func:`context_messages`), else read now; nothing is set aside."""
    message = store.messages.get(entry["id"])
    return (message, None) if message is not None else readable_message(entry)


def settings(store: SessionStore, branch: list[dict[str, Any]] | None = None) -> tuple[tuple[str, str] | None, str | None]:
    """The model (provider, id) and thinking level in force at the leaf."""
    model, level = None, None
    for entry in branch if branch is not None else store.branch():
        if entry.get("type") == "model_change":
            model = (entry.get("provider", ""), entry.get("modelId", ""))
        elif entry.get("type") == "thinking_level_change":
            level = entry.get("thinkingLevel")
    return model, level


def session_name(store: SessionStore) -> str | None:
    name = None
    for entry in store.entries:
        if entry.get("type") == "session_info":
            name = entry.get("name")
    return name


def pending_queue(store: SessionStore) -> list[dict[str, Any]]:
    """``queue_add`` entries neither delivered (a message entry names them) nor cleared."""
    added = [e for e in store.entries if e.get("type") == "queue_add"]
    if not added:
        return []
    delivered = {e.get("queueId") for e in store.entries if e.get("type") == "message" and e.get("queueId")}
    done = {e.get("queueId") for e in store.entries if e.get("type") == "queue_done"}
    return [e for e in added if e.get("queueId") not in delivered and e.get("queueId") not in done]


def interrupted(messages: list[Any]) -> bool:
    """The conversation stops where the agent still owed an answer."""
    for message in reversed(messages):
        role = getattr(message, "role", None)
        if role == "assistant":
            return _unanswered_calls(message, messages)
        if role in ("user", "toolResult"):
            return True
        if role in ("custom", "bashExecution", "compactionSummary", "branchSummary"):
            continue
        return False
    return False


def _unanswered_calls(assistant: AssistantMessage, messages: list[Any]) -> bool:
    calls = {c.id for c in assistant.tool_calls()}
    if not calls or assistant.stop_reason in ("error", "aborted", "length"):
        return False
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return not calls <= answered


def entry_usage(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The model usage an entry records: an answer's, or a summary's own (compaction, branch)."""
    message = entry.get("message")
    usage = (message.get("usage") if isinstance(message, dict) else None) if entry.get("type") == "message" \
        else entry.get("usage")
    return usage if isinstance(usage, dict) else None


def usage_cost(usage: dict[str, Any] | None) -> float:
    """What a recorded usage cost, in USD (0 when it says nothing)."""
    priced = usage.get("cost") if usage else None
    total = priced.get("total") if isinstance(priced, dict) else None
    return float(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else 0.0


def total_cost(entries: list[dict[str, Any]]) -> float:
    """What every model call a session file records has cost."""
    return sum(usage_cost(entry_usage(e)) for e in entries)


def stats(entries: list[dict[str, Any]], context: list[Any], context_tokens: int, window: int | None) -> dict[str, Any]:
    """Counts and totals over the whole file; context usage of the active branch. The totals
    include the subagents that ended (their ``subagent`` entries' usage), also given apart."""
    counts = {"user": 0, "assistant": 0, "toolResult": 0}
    calls = 0
    subagents = {"count": 0, "cost": 0.0}
    tokens: dict[str, int | float] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for entry in entries:
        message = entry.get("message")
        message = message if isinstance(message, dict) else {}
        usage = entry_usage(entry)
        if entry.get("type") == "subagent":
            subagents["count"] += 1
            subagents["cost"] += usage_cost(usage)
        if entry.get("type") == "message" and message.get("role") in counts:
            counts[message["role"]] += 1
            content = message.get("content")
            if message["role"] == "assistant" and isinstance(content, list):
                calls += sum(1 for b in content if isinstance(b, dict) and b.get("type") == "toolCall")
        if isinstance(usage, dict):
            for key in tokens:
                value = usage.get(key)
                tokens[key] += value if isinstance(value, (int, float)) else 0
            cost += usage_cost(usage)
    return {
        "userMessages": counts["user"], "assistantMessages": counts["assistant"],
        "toolCalls": calls, "toolResults": counts["toolResult"],
        "tokens": {**tokens, "total": sum(tokens.values())}, "cost": cost,
        "contextTokens": context_tokens, "contextWindow": window,
        "contextPercent": round(100 * context_tokens / window, 1) if window else None,
        "messagesInContext": len(context), "subagents": subagents,
    }
