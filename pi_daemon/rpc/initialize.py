"""``initialize``: version and capability negotiation.

Kept light (attrs and :mod:`.initialize_types` only) so the daemon answers it before the
rest of the daemon has been imported (see :mod:`.methods`): start-up time is import time. So
the names the answer lists (methods, notifications, events, thinking levels) are not read from
the event classes, the model module and a registry filled by importing every handler module,
which would import all of them: they are generated from those declarations into
:mod:`.initialize_names` by ``python -m pi_daemon.rpc.schema
--write``, with the schema and the client types, and checked for drift the same way.
"""

from __future__ import annotations

import attrs

from .. import __version__
from ..llm import picker
from ..wire.errors import InvalidRequest
from ..wire.framing import CONTENT_LENGTH, NDJSON
from .initialize_names import EVENT_NAMES, NOTIFICATION_NAMES, REQUEST_NAMES, THINKING_LEVEL_NAMES
from .initialize_types import (
    PROTOCOL_VERSION,
    InitializeParams,
    InitializeResult,
    LanguageFeatures,
    ServerCapabilities,
    ServerInfo,
    ServerMode,
)
from .registry import METHODS


@attrs.define
class ClientState:
    initialized: bool = False
    protocol_version: int = PROTOCOL_VERSION
    client_name: str | None = None
    permissions: bool = False
    workspace_trust: bool = False
    allowed_roots: list[str] = attrs.field(factory=list)
    fs_read: bool = False  # the client answers fs/readTextFile
    fs_apply_edit: bool = False  # the client applies workspace/applyEdit
    fs_save: bool = False  # the client saves buffers on fs/save
    dirty_buffers: list[str] = attrs.field(factory=list)  # absolute paths, from fs/didChangeDirty
    language_features: LanguageFeatures | None = None  # the editor/* requests the client answers
    ask_user: bool = False  # the client answers user/ask


def initialize(params: InitializeParams, state: ClientState, max_frame_bytes: int,
               workspace: str, server: ServerMode | None = None) -> InitializeResult:
    if state.initialized:
        raise InvalidRequest("initialize was already received on this connection")
    if params.protocol_version > PROTOCOL_VERSION or params.protocol_version < 1:
        raise InvalidRequest(
            f"protocol version {params.protocol_version} is not supported; "
            f"this daemon speaks version {PROTOCOL_VERSION}",
        )
    state.initialized = True
    state.protocol_version = params.protocol_version
    state.client_name = params.client_info.name if params.client_info else None
    picker.set_phrase(params.client_info.model_picker if params.client_info else None)
    state.permissions = params.capabilities.permissions
    state.workspace_trust = params.capabilities.workspace_trust
    state.allowed_roots = list(params.allowed_roots or [])
    fs = params.capabilities.fs
    state.fs_read = bool(fs and fs.read_text_file)
    state.fs_apply_edit = bool(fs and fs.apply_edit)
    state.fs_save = bool(fs and fs.apply_edit and fs.save)
    state.language_features = params.capabilities.language_features
    state.ask_user = params.capabilities.ask_user
    return InitializeResult(
        protocol_version=PROTOCOL_VERSION,
        server_info=ServerInfo(name="pi-daemon", version=__version__),
        capabilities=ServerCapabilities(
            methods=sorted(set(REQUEST_NAMES).union(m for m, spec in METHODS.items() if spec.is_request)),
            notifications=sorted(set(NOTIFICATION_NAMES).union(m for m, spec in METHODS.items() if not spec.is_request)),
            events=list(EVENT_NAMES),
            framings=[NDJSON, CONTENT_LENGTH],
            max_frame_bytes=max_frame_bytes,
            streaming_behaviors=["steer", "followUp"],
            queue_modes=["one-at-a-time", "all"],
            thinking_levels=list(THINKING_LEVEL_NAMES),
            image_input=True,
            permissions=state.permissions,
            workspace_trust=state.workspace_trust,
            fs=params.capabilities.fs,
            language_features=params.capabilities.language_features,
            ask_user=state.ask_user,
        ),
        workspace=workspace,
        server=server,
    )

