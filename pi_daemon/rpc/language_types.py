"""Protocol types of the editor's language servers as the agent's: the ``editor/*`` requests.

Part of :mod:`.types`, which re-exports every name here. The results are LSP's own shapes,
declared here field for field (the part the daemon reads) for the schema and the clients'
generated types; the daemon reads the answers with lsprotocol's types and converter
(:mod:`.editor_language`). Positions are LSP's: 0-based lines, characters in UTF-16 code units.
"""

from __future__ import annotations

from typing import Literal

import attrs

from .editor_types import Position, Range
from .initialize_types import LanguageFeatures  # re-exported: initialize negotiates it

__all__ = [
    "LanguageFeatures",
    "Location",
    "Diagnostic",
    "FileDiagnostics",
    "DiagnosticsParams",
    "DiagnosticsResult",
    "TextDocumentPositionParams",
    "ReferencesParams",
    "DocumentSymbolsParams",
    "DocumentSymbol",
    "WorkspaceSymbolsParams",
    "SymbolInformation",
    "MarkupContent",
    "Hover",
    "LanguageStatusParams",
    "LanguageStatusResult",
]


@attrs.define
class Location:
    uri: str
    range: Range


@attrs.define
class Diagnostic:
    range: Range
    message: str
    severity: int | None = None  # 1 error, 2 warning, 3 information, 4 hint
    code: int | str | None = None
    source: str | None = None


@attrs.define
class FileDiagnostics:
    uri: str
    diagnostics: list[Diagnostic]


@attrs.define
class DiagnosticsParams:
    session_id: str
    uris: list[str] | None = None  # absent: every file the editor has diagnostics for
    wait_ms: int | None = None  # the files just changed: wait up to this long for their servers' report


@attrs.define
class DiagnosticsResult:
    items: list[FileDiagnostics]


@attrs.define
class TextDocumentPositionParams:
    session_id: str
    uri: str
    position: Position


@attrs.define
class ReferencesParams:
    session_id: str
    uri: str
    position: Position
    include_declaration: bool = True


@attrs.define
class DocumentSymbolsParams:
    session_id: str
    uri: str


@attrs.define
class DocumentSymbol:
    name: str
    kind: int  # LSP's SymbolKind
    range: Range
    selection_range: Range
    detail: str | None = None
    children: list[DocumentSymbol] | None = None


@attrs.define
class WorkspaceSymbolsParams:
    session_id: str
    query: str


@attrs.define
class SymbolInformation:
    name: str
    kind: int  # LSP's SymbolKind
    location: Location
    container_name: str | None = None


@attrs.define
class MarkupContent:
    kind: Literal["plaintext", "markdown"]
    value: str


@attrs.define
class Hover:
    contents: MarkupContent | str
    range: Range | None = None


@attrs.define
class LanguageStatusParams:
    session_id: str
    uri: str


@attrs.define
class LanguageStatusResult:
    servers: list[str]  # the names of the editor's language servers that cover the file
    loading: list[str]  # those of them still loading the project (indexing, LSP progress in flight)
