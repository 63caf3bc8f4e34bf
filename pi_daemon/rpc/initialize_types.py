"""The types of ``initialize``: what a client says it is and can do, and the daemon's answer.

Apart from :mod:`.types` (which re-exports them) so that a leading ``initialize`` is
answered with attrs and cattrs loaded, before the event, message and session types.
"""

from __future__ import annotations

import attrs

PROTOCOL_VERSION = 1


@attrs.define
class Empty:  # no params, or no result (shutdown, exit, ...)
    pass


@attrs.define
class FsCapabilities:
    read_text_file: bool = False
    apply_edit: bool = False
    save: bool = False  # the client saves the agent's edits before its commands (fs/save)


@attrs.define
class LanguageFeatures:
    """What the client's language servers answer for the agent (``editor/*`` requests)."""
    diagnostics: bool = False
    definition: bool = False
    references: bool = False
    document_symbols: bool = False
    workspace_symbols: bool = False
    hover: bool = False
    status: bool = False  # editor/languageStatus: which servers cover a file, which are still loading


@attrs.define
class ClientInfo:
    name: str = ""
    version: str | None = None
    model_picker: str | None = None  # how this client's user picks a model, for the daemon's texts


@attrs.define
class ClientCapabilities:
    permissions: bool = False
    workspace_trust: bool = False
    fs: FsCapabilities | None = None
    language_features: LanguageFeatures | None = None
    ask_user: bool = False  # the client answers user/ask (the agent's questions to the user)


@attrs.define
class InitializeParams:
    protocol_version: int = PROTOCOL_VERSION
    client_info: ClientInfo | None = None
    capabilities: ClientCapabilities = attrs.field(factory=ClientCapabilities)
    allowed_roots: list[str] | None = None


@attrs.define
class ServerInfo:
    name: str
    version: str


@attrs.define
class ServerCapabilities:
    methods: list[str]
    notifications: list[str]
    events: list[str]
    framings: list[str]
    max_frame_bytes: int
    streaming_behaviors: list[str]
    queue_modes: list[str]
    thinking_levels: list[str]
    image_input: bool = True
    permissions: bool = False
    workspace_trust: bool = False
    fs: FsCapabilities | None = None
    language_features: LanguageFeatures | None = None  # the features the agent's tools use
    ask_user: bool = False  # the daemon sends user/ask to a client that declared askUser


@attrs.define
class ServerMode:
    shared: bool  # a server other clients may be connected to too (pi-daemon serve / attach)
    pid: int  # the daemon's process


@attrs.define
class InitializeResult:
    protocol_version: int
    server_info: ServerInfo
    capabilities: ServerCapabilities
    workspace: str  # the workspace root, absolute: the base of the relative paths the daemon sends
    server: ServerMode | None = None
