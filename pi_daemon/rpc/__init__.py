"""The JSON-RPC 2.0 daemon over stdio: framing, transport, dispatch and method handlers."""
