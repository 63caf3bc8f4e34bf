"""The native face: the daemon's own JSON-RPC protocol — its declaration, types, schema and method handlers."""
