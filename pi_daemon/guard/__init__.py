"""The door: what decides whether something a workspace, a model or a client names may be used.

Workspace trust, the boundary around the workspace and opening paths beneath it, the programs
the daemon runs itself, permissions and their rules, session modes, and the sandbox. Everything
here imports only the package's leaves: the tools, the change record and the layers above ask
the guard, never the other way round.
"""
