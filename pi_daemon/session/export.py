"""``session/export``: the history of the current branch, or of the whole tree, as
self-contained HTML or as Markdown.

The history is every stored message on the way, not the model's context: after a
compaction the messages it summarised are still exported, followed by the summary. A
tree export walks the tree depth first; where it branches, each branch starts with a
heading that names the entry it continues from (the current branch is marked).
"""

from __future__ import annotations

import html
import json
from typing import Any

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall
from .rebuild import CONTEXT_TYPES, readable_message
from .store import SessionStore


class Heading(str):
    """A section heading between messages: where a branch of the tree starts."""


def history(store: SessionStore, scope: str = "branch") -> list[Any]:
    """Messages (and, for the tree, branch headings) to export, in reading order."""
    if scope != "tree":
        return [m for m in map(_message, store.branch()) if m is not None]
    children: dict[str | None, list[dict[str, Any]]] = {}
    for entry in store.by_id.values():
        children.setdefault(entry.get("parentId"), []).append(entry)
    on_path = {e["id"] for e in store.branch()}
    out: list[Any] = []
    todo: list[Any] = list(reversed(children.get(None, [])))
    while todo:  # depth first, without recursion: a long conversation is a deep tree
        item = todo.pop()
        if isinstance(item, Heading):
            out.append(item)
            continue
        message = _message(item)
        if message is not None:
            out.append(message)
        kids = children.get(item["id"], [])
        if len(kids) > 1:
            for n, kid in reversed(list(enumerate(kids, 1))):
                todo.append(kid)
                mark = " (current)" if kid["id"] in on_path else ""
                todo.append(Heading(f"Branch {n} of {len(kids)} from entry {item['id']}{mark}"))
        else:
            todo.extend(kids)
    return out


def _message(entry: dict[str, Any]) -> Any:
    if entry.get("type") not in CONTEXT_TYPES:
        return None
    return readable_message(entry)[0]

CSS = """body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
.m{border-radius:8px;padding:.6rem .9rem;margin:.8rem 0;white-space:pre-wrap;word-wrap:break-word}
.user{background:#eef4ff}.assistant{background:#f6f6f6}.toolResult{background:#fbfaf4;font:13px monospace}
.error{background:#fff0f0}.summary{background:#f3f0ff}.role{font-weight:600;font-size:12px;color:#666;display:block}
details{margin:.3rem 0}pre{background:#272822;color:#f8f8f2;padding:.6rem;border-radius:6px;overflow:auto}
img{max-width:100%}"""


def _blocks(message: Any) -> list[tuple[str, str]]:
    """``(kind, text)`` pieces of a message: text, thinking, call, image."""
    content = getattr(message, "content", "")
    if isinstance(content, str):
        return [("text", content)]
    out = []
    for block in content:
        if isinstance(block, TextContent):
            out.append(("text", block.text))
        elif isinstance(block, ThinkingContent):
            out.append(("thinking", block.thinking or "(redacted)"))
        elif isinstance(block, ToolCall):
            out.append(("call", f"{block.name}({json.dumps(block.arguments, ensure_ascii=False)})"))
        elif isinstance(block, ImageContent):
            out.append(("image", f"data:{block.mime_type};base64,{block.data}"))
    return out


def _title(message: Any) -> str:
    role = getattr(message, "role", "")
    if role == "toolResult":
        return f"tool result: {message.tool_name}" + (" (error)" if message.is_error else "")
    if role == "compactionSummary":
        return "compaction: summary of the conversation before this point"
    if role == "branchSummary":
        return "summary of a branch that was left"
    if isinstance(message, AssistantMessage):
        return f"assistant ({message.provider}/{message.model})"
    return role


def markdown(messages: list[Any], title: str) -> str:
    lines = [f"# {title}", ""]
    for message in messages:
        if isinstance(message, Heading):
            lines += [f"## — {message} —", ""]
            continue
        role = getattr(message, "role", "")
        lines += [f"## {_title(message)}", ""]
        if role in ("compactionSummary", "branchSummary"):
            lines += [message.summary, ""]
            continue
        if role == "bashExecution":
            lines += ["```", f"$ {message.command}", message.output, "```", ""]
            continue
        for kind, text in _blocks(message):
            if kind == "text":
                lines += [text, ""]
            elif kind == "thinking":
                lines += ["> " + text.replace("\n", "\n> "), ""]
            elif kind == "call":
                lines += ["```", text, "```", ""]
            elif kind == "image":
                lines += ["![image](" + text + ")", ""]
        if isinstance(message, AssistantMessage) and message.error_message:
            lines += [f"*{message.stop_reason}: {message.error_message}*", ""]
    return "\n".join(lines)


def html_page(messages: list[Any], title: str) -> str:
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    for message in messages:
        if isinstance(message, Heading):
            parts.append(f"<h2>{html.escape(message)}</h2>")
            continue
        role = getattr(message, "role", "")
        css = "summary" if role in ("compactionSummary", "branchSummary") else role
        if getattr(message, "is_error", False) or getattr(message, "stop_reason", None) in ("error", "aborted"):
            css += " error"
        body = []
        if role in ("compactionSummary", "branchSummary"):
            body.append(html.escape(message.summary))
        elif role == "bashExecution":
            body.append(f"<pre>$ {html.escape(message.command)}\n{html.escape(message.output)}</pre>")
        else:
            for kind, text in _blocks(message):
                if kind == "text":
                    body.append(html.escape(text))
                elif kind == "thinking":
                    body.append(f"<details><summary>thinking</summary>{html.escape(text)}</details>")
                elif kind == "call":
                    body.append(f"<pre>{html.escape(text)}</pre>")
                elif kind == "image":
                    body.append(f'<img src="{html.escape(text)}" alt="image">')
        if isinstance(message, AssistantMessage) and message.error_message:
            body.append(f"<em>{html.escape(message.stop_reason)}: {html.escape(message.error_message)}</em>")
        parts.append(f'<div class="m {css}"><span class="role">{html.escape(_title(message))}</span>{"".join(body)}</div>')
    parts.append("</body></html>")
    return "".join(parts)

