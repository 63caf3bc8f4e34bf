"""The native face's language features: the agent's language tools ask the editor.

When the client declared ``capabilities.languageFeatures`` in ``initialize``, a session's
language tools (:mod:`..tools.language`) reach the editor's language servers through
:class:`EditorLanguage`: ``editor/diagnostics``, ``editor/definition``,
``editor/references``, ``editor/documentSymbols``, ``editor/workspaceSymbols`` and
``editor/hover``, with files as ``file:`` URIs (asked of the session's editor: with several
clients, the one that last prompted in it); with ``status``, ``editor/languageStatus`` says
which servers cover a file and which still load the project (names only, bounded: at most
``MAX_SERVERS`` of ``MAX_NAME_CHARS`` printable characters each). The answers are read with lsprotocol's types
and converter (LSP's own vocabulary, loaded in a thread with the first request); an answer of the wrong
shape fails the tool with an error naming the method.
"""

from __future__ import annotations

import errno
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import attrs

from ..converter import camel, to_wire
from ..tools.language import LanguageAccess
from .initialize import ClientState
from .initialize_types import LanguageFeatures
from .lsp import converter as lsp_converter, loaded as lsp_loaded
from .types import (EDITOR_DEFINITION, EDITOR_DIAGNOSTICS, EDITOR_DOCUMENT_SYMBOLS, EDITOR_HOVER,
                    EDITOR_LANGUAGE_STATUS, EDITOR_REFERENCES, EDITOR_WORKSPACE_SYMBOLS, DiagnosticsParams,
                    DocumentSymbolsParams, LanguageStatusParams, Position, ReferencesParams, TextDocumentPositionParams,
                    WorkspaceSymbolsParams)

if TYPE_CHECKING:
    from lsprotocol import types as lsp

Ask = Callable[[str, dict[str, Any]], Awaitable[Any]]  # (method, params) -> result; raises OSError

MAX_SERVERS = 20  # names an editor/languageStatus list keeps
MAX_NAME_CHARS = 100
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")

def features_of(client: ClientState) -> frozenset[str]:
    """The language features the client declared, by their wire names."""
    declared = client.language_features
    if declared is None:
        return frozenset()
    return frozenset(camel(f.name) for f in attrs.fields(LanguageFeatures) if getattr(declared, f.name))


def _read(method: str, answer: Any, shape: Any) -> Any:
    """The answer as lsprotocol's ``shape``; OSError naming the method when it is not one."""
    try:
        return lsp_converter().structure(answer, shape)
    except Exception as exc:  # cattrs' errors: the editor's answer is not LSP's shape
        raise OSError(errno.EPROTO, f"the editor's answer to {method} is not LSP's shape ({exc})") from None


def _names(answer: Any, field: str) -> list[str]:
    """A list of server names from an ``editor/languageStatus`` answer, bounded and on one line each."""
    names = answer.get(field) if isinstance(answer, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise OSError(errno.EPROTO, f"the editor's answer to {EDITOR_LANGUAGE_STATUS.name} has no {field} list "
                                    "of strings")
    kept = [_CONTROL.sub(" ", n).strip()[:MAX_NAME_CHARS] or "a language server" for n in names[:MAX_SERVERS]]
    return list(dict.fromkeys(kept))


class EditorLanguage(LanguageAccess):
    def __init__(self, ask: Ask, session_id: str, client: ClientState) -> None:
        self.ask = ask  # raises OSError when no editor is attached
        self.session_id = session_id
        self.features = features_of(client)  # the opening client's: they decide the session's tools

    async def _ask(self, spec: Any, params: Any, shape: Any) -> Any:
        """The editor's answer to ``spec``'s request, as lsprotocol's ``shape``."""
        return _read(spec.name, await self.ask(spec.name, to_wire(params)), shape)

    async def _at(self, spec: Any, file: Path, line: int, character: int, shape: Any) -> Any:
        params = TextDocumentPositionParams(session_id=self.session_id, uri=file.as_uri(),
                                            position=Position(line=line, character=character))
        return await self._ask(spec, params, shape)

    async def diagnostics(self, files: list[Path] | None,
                          wait_ms: int | None = None) -> list[tuple[str, list[lsp.Diagnostic]]]:
        await lsp_loaded()
        from lsprotocol import types as lsp

        params = DiagnosticsParams(session_id=self.session_id, wait_ms=wait_ms,
                                   uris=[f.as_uri() for f in files] if files is not None else None)
        answer = await self.ask(EDITOR_DIAGNOSTICS.name, to_wire(params))
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise OSError(errno.EPROTO, "the editor's answer to editor/diagnostics has no items list")
        return [(str(i.get("uri")), _read(EDITOR_DIAGNOSTICS.name, i.get("diagnostics"), list[lsp.Diagnostic]))
                for i in items]

    async def definition(self, file: Path, line: int, character: int) -> list[lsp.Location]:
        await lsp_loaded()
        from lsprotocol import types as lsp

        found = await self._at(EDITOR_DEFINITION, file, line, character, list[lsp.Location] | None)
        return list(found or [])

    async def references(self, file: Path, line: int, character: int, declaration: bool) -> list[lsp.Location]:
        await lsp_loaded()
        from lsprotocol import types as lsp

        params = ReferencesParams(session_id=self.session_id, uri=file.as_uri(),
                                  position=Position(line=line, character=character), include_declaration=declaration)
        return list(await self._ask(EDITOR_REFERENCES, params, list[lsp.Location] | None) or [])

    async def document_symbols(self, file: Path) -> list[lsp.DocumentSymbol]:
        await lsp_loaded()
        from lsprotocol import types as lsp

        params = DocumentSymbolsParams(session_id=self.session_id, uri=file.as_uri())
        return list(await self._ask(EDITOR_DOCUMENT_SYMBOLS, params, list[lsp.DocumentSymbol] | None) or [])

    async def workspace_symbols(self, query: str) -> list[lsp.SymbolInformation]:
        await lsp_loaded()
        from lsprotocol import types as lsp

        params = WorkspaceSymbolsParams(session_id=self.session_id, query=query)
        return list(await self._ask(EDITOR_WORKSPACE_SYMBOLS, params, list[lsp.SymbolInformation] | None) or [])

    async def hover(self, file: Path, line: int, character: int) -> lsp.Hover | None:
        await lsp_loaded()
        from lsprotocol import types as lsp

        found: lsp.Hover | None = await self._at(EDITOR_HOVER, file, line, character, lsp.Hover | None)
        return found

    async def status(self, file: Path) -> tuple[list[str], list[str]] | None:
        if "status" not in self.features:
            return None
        answer = await self.ask(EDITOR_LANGUAGE_STATUS.name,
                                to_wire(LanguageStatusParams(session_id=self.session_id, uri=file.as_uri())))
        return _names(answer, "servers"), _names(answer, "loading")
