"""The ACP face: the Agent Client Protocol (v1) over stdio NDJSON, for Zed, JetBrains,
CodeCompanion.nvim and avante.nvim.

It is a second face over the same host as the native one (:mod:`pi_daemon.host`): same
sessions, tools, providers, permissions, settings and slash commands, on the same wire
(:mod:`pi_daemon.wire`). ``server`` maps ACP's methods onto the wire and builds the host,
``initialize`` answers the handshake, ``prompt`` turns ACP content into
the model's input, ``updates`` turns agent events into ``session/update`` notifications,
``files`` is the editor side of the file-access seam, and ``agent`` holds the methods.
"""
