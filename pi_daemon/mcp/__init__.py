"""MCP tool sources: servers from ``mcp.json`` files or a session's request, their tools as agent tools.

Nothing here imports the ``mcp`` SDK at import time: it is loaded (in a worker thread)
only when the first server starts, so start-up and ``initialize`` never pay for it.
"""
