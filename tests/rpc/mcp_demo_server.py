"""A real MCP server over stdio, written with the SDK's server side, for the daemon's tests.

``python mcp_demo_server.py [--fail-start] [--http PORT]`` (stdio, or streamable HTTP on
127.0.0.1:PORT/mcp). Its tools: ``add`` (text; declared read-only), ``picture``
(an image), ``notes`` (an embedded text resource), ``refuse`` (a result with
``isError``), ``crash`` (the process dies mid-call), ``hang`` (never answers) and
``starts`` (how many times this server was started, counted in ``$DEMO_COUNT_FILE``) and
``token`` (over HTTP: the request's ``X-Token`` header).
"""

import base64
import os
import sys
import time
from pathlib import Path

if "--fail-start" in sys.argv:
    print("demo server: cannot open its database", file=sys.stderr)
    sys.exit(3)

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402
from mcp.types import (CallToolResult, EmbeddedResource, ImageContent, TextContent,  # noqa: E402
                       TextResourceContents, ToolAnnotations)

PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")).decode()
count_file = os.environ.get("DEMO_COUNT_FILE")
if count_file:
    path = Path(count_file)
    path.write_text(str(int(path.read_text() or 0) + 1) if path.exists() else "1")

server = MCPServer("demo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def picture() -> CallToolResult:
    """A one-pixel picture."""
    return CallToolResult(content=[TextContent(type="text", text="a pixel:"),
                                   ImageContent(type="image", data=PNG, mime_type="image/png")])


@server.tool()
def notes() -> CallToolResult:
    """The project notes, as a resource."""
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=TextResourceContents(
        uri="notes://today", text="buy milk", mime_type="text/plain"))])


@server.tool()
def flood(mib: int) -> str:
    """That many MiB of text."""
    return "flood " * (mib * 1024 * 1024 // 6)


@server.tool()
def refuse(reason: str) -> CallToolResult:
    """Always fails, saying why."""
    return CallToolResult(content=[TextContent(type="text", text=f"refused: {reason}")], is_error=True)


@server.tool()
def crash() -> str:
    """The server dies during this call."""
    os._exit(7)


@server.tool()
async def hang() -> str:
    """Never answers."""
    import anyio
    await anyio.sleep(3600)
    return "never"


@server.tool()
def starts() -> str:
    """How many times the server was started."""
    return Path(count_file).read_text() if count_file else "?"


@server.tool()
def token(ctx: Context) -> str:
    """The X-Token header of this HTTP request."""
    request = getattr(ctx.request_context, "request", None)
    return request.headers.get("x-token", "(none)") if request is not None else "(not over HTTP)"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
