"""``session/export``: the active branch as self-contained HTML or as Markdown."""

from __future__ import annotations

import html
import json
from typing import Any

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall

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
    if role in ("compactionSummary", "branchSummary"):
        return "summary of earlier conversation"
    if isinstance(message, AssistantMessage):
        return f"assistant ({message.provider}/{message.model})"
    return role


def markdown(messages: list[Any], title: str) -> str:
    lines = [f"# {title}", ""]
    for message in messages:
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

