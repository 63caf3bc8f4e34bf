"""MCP tools as agent tools: ``<server>__<tool>`` names, their schemas, results as tool results.

Results keep what the model can use: text, images, embedded text resources (as text with
their URI), links to resources; audio and binary resources are described in a line.
``isError`` makes the result an error; ``structuredContent`` alone is sent as JSON.
A result keeps at most :data:`MAX_TEXT_BYTES` of text and :data:`MAX_IMAGE_BYTES` of images;
what is cut is said in a closing line (a server's answer goes into the model's context and
the session file).
"""

from __future__ import annotations

import json
from typing import Any

from ..cancel import CancelToken
from ..messages import ImageContent, TextContent, ToolResult
from ..tools.base import Tool, ToolUpdate
from .connection import CallFailed, McpConnection, RemoteTool
from .names import tool_name


def _block(block: dict[str, Any]) -> Any:
    kind = block.get("type")
    if kind == "text":
        return TextContent(text=block.get("text", ""))
    if kind == "image":
        return ImageContent(data=block.get("data", ""), mime_type=block.get("mimeType", "image/png"))
    if kind == "resource":
        resource = block.get("resource") or {}
        uri = resource.get("uri", "")
        if "text" in resource:
            return TextContent(text=f"[resource {uri}]\n{resource['text']}")
        return TextContent(text=f"[binary resource {uri} ({resource.get('mimeType') or 'unknown type'}), "
                                f"{len(resource.get('blob', '')) * 3 // 4} bytes, not shown]")
    if kind == "resource_link":
        return TextContent(text=f"[resource link {block.get('uri', '')}: {block.get('name', '')}"
                                f"{' — ' + block['description'] if block.get('description') else ''}]")
    if kind == "audio":
        return TextContent(text=f"[audio ({block.get('mimeType', 'unknown type')}), not shown]")
    return TextContent(text=f"[{kind} content, not shown]")


MAX_TEXT_BYTES = 256 * 1024
MAX_IMAGE_BYTES = 10 * 1024 * 1024  # base64, all images of one result


def _bounded(content: list[Any]) -> list[Any]:
    kept: list[Any] = []
    text_left, image_left, cut_text, cut_images = MAX_TEXT_BYTES, MAX_IMAGE_BYTES, 0, 0
    for block in content:
        if isinstance(block, ImageContent):
            if len(block.data) > image_left:
                cut_images += 1
                continue
            image_left -= len(block.data)
        else:
            raw = block.text.encode("utf-8", "surrogatepass")
            if len(raw) > text_left:
                cut_text += len(raw) - text_left
                block = TextContent(text=raw[:text_left].decode("utf-8", "ignore"))
            text_left -= min(len(raw), text_left)
        kept.append(block)
    if cut_text or cut_images:
        kept.append(TextContent(text=f"[output cut to its first {MAX_TEXT_BYTES // 1024} KiB of text and "
                                     f"{MAX_IMAGE_BYTES >> 20} MiB of images: {cut_text} bytes of text and "
                                     f"{cut_images} image(s) left out]"))
    return kept


def to_tool_result(result: Any) -> ToolResult:
    """An SDK ``CallToolResult`` as the agent's ToolResult."""
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content or []]
    content = [_block(b) for b in blocks]
    structured = getattr(result, "structured_content", None)
    if not content and structured is not None:
        content = [TextContent(text=json.dumps(structured, ensure_ascii=False))]
    if not content:
        content = [TextContent(text="(no output)")]
    too_large = structured is not None and len(json.dumps(structured)) > MAX_TEXT_BYTES
    return ToolResult(content=_bounded(content), is_error=bool(result.is_error),
                      details={"mcp": {"structured": None if too_large else structured}}
                      if structured is not None else None)


class McpTool(Tool):
    def __init__(self, connection: McpConnection, remote: RemoteTool) -> None:
        self.connection = connection
        self.remote = remote
        self.name = tool_name(connection.name, remote.name)
        self.label = f"{connection.name}: {remote.name}"
        self.read_only = remote.read_only
        self.description = remote.description or f"{remote.name} (MCP server {connection.name})"
        schema = dict(remote.input_schema) if isinstance(remote.input_schema, dict) else {}
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.parameters = schema

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult | str:
        try:
            result = await self.connection.call(self.remote.name, args, cancel)
        except CallFailed as exc:
            return ToolResult.text(str(exc), is_error=True)
        return to_tool_result(result)
