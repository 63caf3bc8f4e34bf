"""Images returned by tools, for APIs whose tool results take text only (OpenAI's two APIs).

Each run of tool results keeps its text (with a note) and the images follow it in one user
message, so the model still sees them, right after the calls that produced them.
"""

from __future__ import annotations

from typing import Any

import attrs

from ..messages import ImageContent, TextContent, ToolResultMessage, UserMessage

NOTE = "\n(the images are attached in the next message)"
HEADING = "Images returned by the tool calls above:"


def images_after_tool_results(messages: list[Any]) -> list[Any]:
    out: list[Any] = []
    pending: list[ImageContent] = []
    for message in messages:
        if not isinstance(message, ToolResultMessage) and pending:
            out.append(UserMessage(content=[TextContent(text=HEADING), *pending]))
            pending = []
        if isinstance(message, ToolResultMessage) and any(isinstance(b, ImageContent) for b in message.content):
            pending += [b for b in message.content if isinstance(b, ImageContent)]
            text = [b for b in message.content if isinstance(b, TextContent)]
            message = attrs.evolve(message, content=[*text, TextContent(text=NOTE)])
        out.append(message)
    if pending:
        out.append(UserMessage(content=[TextContent(text=HEADING), *pending]))
    return out
