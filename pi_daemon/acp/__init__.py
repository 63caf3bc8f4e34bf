"""The ACP face: the Agent Client Protocol (v1) over stdio NDJSON, for Zed, JetBrains,
CodeCompanion.nvim and avante.nvim.

It is a second protocol layer over the same session layer as the native JSON-RPC face
(:mod:`pi_daemon.session`): same sessions, tools, providers, permissions and settings.
``connection`` speaks JSON-RPC on the daemon's own framing, ``initialize`` answers the
handshake (light enough for the start-up fast path), ``prompt`` turns ACP content into
the model's input, ``updates`` turns agent events into ``session/update`` notifications,
``files`` is the editor side of the file-access seam, and ``agent`` holds the methods.
"""
