"""The editor's language servers as the agent's tools: diagnostics, definition, references,
symbols and hover.

A session gets these tools only when its client answers the matching ``editor/*`` requests
(:class:`LanguageAccess`, implemented by the native face). The model names a place as a
file, a 1-based line and either a 1-based column or the symbol's name on that line (or the
name alone: its first use in the file); the tool turns it into LSP's position (0-based, UTF-16 code units) and renders what comes back
compactly: ``path:line:column``, then the line of source, at most ``MAX_ITEMS`` items.
Files are read through the session's file access (the editor's buffers when it has them),
confined like every other read.

With diagnostics, ``write`` and ``edit`` report what they broke (:class:`CheckedEdit`): the
file's diagnostics are asked before the change and after it (the client waits up to the
``diagnostics.waitMs`` setting for its servers to report on the changed file, and answers at
once for a file no server watches), and the errors and warnings that are new are appended
to the tool's result and its ``details.introduced``.

With ``status``, a tool asks which servers cover each file it answers about before it answers:
none → it says so (never "no errors" for a file nobody checks); some still loading the project →
it waits for them (up to ``MAX_DIAGNOSTICS_WAIT_MS``), then answers, marked partial if they are
still loading.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import unquote, urlparse

from ..cancel import CancelToken, race
from ..messages import TextContent, ToolResult
from .base import Proposal, Tool, ToolUpdate
from ..guard.workspace import READ, PathRefused
from .workspace_tool import WorkspaceTool, failure

if TYPE_CHECKING:
    from lsprotocol import types as lsp

MAX_ITEMS = 100
DEFAULT_DIAGNOSTICS_WAIT_MS = 1500
MAX_DIAGNOSTICS_WAIT_MS = 10_000
LOADING_POLL_S = 0.25  # how often a tool asks again whether the servers still load the project


class LanguageAccess:
    """The editor's language servers. ``features`` names what it answers (``diagnostics``,
    ``definition``, ``references``, ``documentSymbols``, ``workspaceSymbols``, ``hover``, ``status``);
    every failure is an OSError saying why."""

    features: frozenset[str] = frozenset()

    async def diagnostics(self, files: list[Path] | None,
                          wait_ms: int | None = None) -> list[tuple[str, list[lsp.Diagnostic]]]:
        """Per file URI, its diagnostics; ``wait_ms``: the files just changed, wait for a report."""
        raise NotImplementedError

    async def definition(self, file: Path, line: int, character: int) -> list[lsp.Location]:
        raise NotImplementedError

    async def references(self, file: Path, line: int, character: int, declaration: bool) -> list[lsp.Location]:
        raise NotImplementedError

    async def document_symbols(self, file: Path) -> list[lsp.DocumentSymbol]:
        raise NotImplementedError

    async def workspace_symbols(self, query: str) -> list[lsp.SymbolInformation]:
        raise NotImplementedError

    async def hover(self, file: Path, line: int, character: int) -> lsp.Hover | None:
        raise NotImplementedError

    async def status(self, file: Path) -> tuple[list[str], list[str]] | None:
        """(the servers that cover ``file``, those of them still loading); None: the editor does not say."""
        return None


class Coverage:
    """What the language servers know of the files a tool answers about."""

    def __init__(self) -> None:
        self.uncovered: list[Path] = []  # no server covers these
        self.loading: list[str] = []  # servers still loading when the wait ran out

    def note(self) -> str:
        """The line that starts a partial answer ("" when it is whole)."""
        if not self.loading:
            return ""
        names = " and ".join(self.loading)
        return f"Partial: {names} {'is' if len(self.loading) == 1 else 'are'} still loading the project; " \
               "this may be incomplete.\n"


async def coverage(language: LanguageAccess, files: list[Path], cancel: CancelToken) -> Coverage:
    """Which of ``files`` no server covers; waits (bounded, until ``cancel``) for the servers that still
    load the project."""
    found = Coverage()
    deadline = time.monotonic() + MAX_DIAGNOSTICS_WAIT_MS / 1000
    for file in files:
        while True:
            status = await language.status(file)
            cancel.raise_if_cancelled()  # a stop that came with the answer
            if status is None:
                break
            servers, loading = status
            if not servers:
                found.uncovered.append(file)
                break
            if not loading or time.monotonic() >= deadline:
                found.loading += [name for name in loading if name not in found.loading]
                break
            await race(asyncio.sleep(min(LOADING_POLL_S, max(0.0, deadline - time.monotonic()))), cancel)
    return found


def path_of(uri: str) -> Path | None:
    """The file a ``file:`` URI names; None for any other scheme."""
    parsed = urlparse(uri)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def column_of(line_text: str, units: int) -> int:
    """The 1-based column (in characters) of a UTF-16 offset into ``line_text``."""
    count = 0
    for index, char in enumerate(line_text):
        if count >= units:
            return index + 1
        count += 2 if ord(char) > 0xFFFF else 1
    return len(line_text) + 1


PLACE = {
    "path": {"type": "string", "description": "file path, relative to the workspace"},
    "line": {"type": "integer", "minimum": 1, "description": "line (1-based); without it, symbol's first use in the file"},
    "column": {"type": "integer", "minimum": 1, "description": "column (1-based); or give symbol"},
    "symbol": {"type": "string", "minLength": 1, "description": "the name on that line (instead of column)"},
}


class LanguageTool(WorkspaceTool):
    """A tool asking the language servers; OSError from them becomes an error result."""
    read_only = True

    def __init__(self, workspace: Any, files: Any, language: LanguageAccess) -> None:
        super().__init__(workspace, files)
        self.language = language

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult | str:
        try:
            return await super().execute(call_id, args, cancel, on_update)
        except OSError as exc:
            return failure(f"the editor's language server could not answer: {exc.strerror or exc}")

    async def lines(self, path: str) -> tuple[list[str], Path]:
        data, target = await self.files.read(path, READ)
        return data.decode("utf-8", "replace").splitlines(), target

    async def known(self, file: Path, answer: Callable[[], Awaitable[str]], cancel: CancelToken) -> ToolResult:
        """``answer()`` about ``file`` once its servers have loaded; or why nothing is known of it."""
        known = await coverage(self.language, [file], cancel)
        if known.uncovered:
            return ToolResult.text(f"no language server in the editor covers {self.workspace.show(file)}; "
                                   "nothing is known about it")
        return ToolResult.text(known.note() + await answer())

    async def place(self, args: dict[str, Any]) -> tuple[Path, int, int] | ToolResult:
        """``(file, line, character)`` in LSP's terms, or an error result saying what is wrong."""
        lines, target = await self.lines(args["path"])
        symbol = args.get("symbol")
        if "line" not in args:
            if symbol is None:
                return failure("give the line (with its column or the symbol's name), or the symbol's name alone")
            pattern = re.compile(rf"(?<!\w){re.escape(symbol)}(?!\w)")
            number = next((n for n, text in enumerate(lines, 1) if pattern.search(text)), 0)
            if not number:
                return failure(f"{symbol!r} is not in {args['path']}")
        else:
            number = args["line"]
        if number > len(lines):
            return failure(f"{args['path']} has {len(lines)} lines; there is no line {number}")
        text = lines[number - 1]
        column = args.get("column")
        if symbol is not None:
            found = [m.start() for m in re.finditer(rf"(?<!\w){re.escape(symbol)}(?!\w)", text)] or \
                [m.start() for m in re.finditer(re.escape(symbol), text)]
            if not found:
                return failure(f"{symbol!r} is not on line {number} of {args['path']}: {text.strip()!r}")
            index = min(found, key=lambda at: abs(at + 1 - column)) if column else found[0]
        elif column is not None:
            index = min(column - 1, len(text))
        else:
            return failure("give the symbol's name on that line (symbol) or its column")
        return target, number - 1, utf16_units(text[:index])

    async def render_locations(self, locations: list[lsp.Location], what: str) -> str:
        if not locations:
            return f"no {what} found"
        shown: list[str] = []
        texts: dict[str, list[str] | None] = {}
        for location in locations[:MAX_ITEMS]:
            shown.append(await self.render_at(location.uri, location.range.start.line,
                                              location.range.start.character, "", texts))
        more = len(locations) - MAX_ITEMS
        return "\n".join(shown) + (f"\n[{more} more not shown]" if more > 0 else "")

    async def render_at(self, uri: str, line: int, character: int, label: str,
                        texts: dict[str, list[str] | None]) -> str:
        """``path:line:col label`` and the line of source under it, when the file can be read."""
        path = path_of(uri)
        if path is None:
            return f"{uri}:{line + 1}:{character + 1} {label}".rstrip()
        if str(path) not in texts:
            try:
                texts[str(path)] = (await self.lines(str(path)))[0]
            except (OSError, PathRefused):
                texts[str(path)] = None  # outside the workspace, or gone: no source line
        lines = texts[str(path)]
        source = lines[line] if lines is not None and line < len(lines) else None
        column = column_of(source, character) if source is not None else character + 1
        head = f"{self.workspace.show(path)}:{line + 1}:{column} {label}".rstrip()
        return head + (f"\n    {source.strip()}" if source is not None and source.strip() else "")


class DiagnosticsTool(LanguageTool):
    name = "diagnostics"
    description = ("The errors and warnings the editor's language servers report, for the given files or, "
                   "without paths, for every file they have looked at. Use it after changing code instead of "
                   "running a build to see whether it still type-checks.")
    parameters = {"type": "object", "properties": {
        "paths": {"type": "array", "items": {"type": "string"}, "description": "files, relative to the workspace"},
    }, "additionalProperties": False}

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        files = [self.workspace.resolve(p) for p in args["paths"]] if args.get("paths") else None
        known = await coverage(self.language, files or [], cancel)
        unknown = [f"no language server in the editor covers {self.workspace.show(f)}; its errors are unknown"
                   for f in known.uncovered]
        checked = [f for f in files if f not in known.uncovered] if files is not None else None
        if checked == []:
            return ToolResult.text(known.note() + "\n".join(unknown))
        found = await self.language.diagnostics(checked)
        items = sorted(((d.severity or 1, uri, d) for uri, diagnostics in found for d in diagnostics),
                       key=lambda x: (x[0], x[1], x[2].range.start.line))
        if not items:
            if checked is None:
                where = ""
            elif unknown:  # name the files that were checked, beside those nobody checks
                where = " in " + ", ".join(self.workspace.show(f) for f in checked)
            else:
                where = " in those files"
            return ToolResult.text("\n".join([known.note() + "no errors or warnings" + where, *unknown]))
        shown: list[str] = []
        texts: dict[str, list[str] | None] = {}
        for severity, uri, d in items[:MAX_ITEMS]:
            where = f"[{d.source}{' ' + str(d.code) if d.code is not None else ''}]" if d.source else ""
            label = f"{_severity(d)}: {d.message.splitlines()[0] if d.message else ''} {where}"
            shown.append(await self.render_at(uri, d.range.start.line, d.range.start.character, label, texts))
        counts = {name: sum(1 for _, _, d in items if _severity(d) == name) for name in ("error", "warning")}
        more = len(items) - MAX_ITEMS
        summary = f"{counts['error']} error(s), {counts['warning']} warning(s)"
        cut = [f"[{more} more not shown]"] if more > 0 else []
        return ToolResult.text("\n".join([known.note() + summary, *shown, *cut, *unknown]))


class PlaceTool(LanguageTool):
    """A question about one place of a file: the model names it, :meth:`answer` asks about it."""

    parameters = {"type": "object", "properties": PLACE, "required": ["path"], "additionalProperties": False}

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        place = await self.place(args)
        if isinstance(place, ToolResult):
            return place
        return await self.known(place[0], lambda: self.answer(args, *place), cancel)

    async def answer(self, args: dict[str, Any], file: Path, line: int, character: int) -> str:
        raise NotImplementedError


class DefinitionTool(PlaceTool):
    name = "definition"
    description = ("Where a symbol is defined, as the editor's language server knows it (types, imports and "
                   "all): name the place it is used (path, line, and the symbol's name or column).")

    async def answer(self, args: dict[str, Any], file: Path, line: int, character: int) -> str:
        return await self.render_locations(await self.language.definition(file, line, character), "definition")


class ReferencesTool(PlaceTool):
    name = "references"
    description = ("Every place a symbol is used, as the editor's language server knows it: name one place "
                   "(path, line, and the symbol's name or column).")
    parameters = {"type": "object", "properties": {
        **PLACE, "includeDeclaration": {"type": "boolean", "description": "list the declaration too (default true)"},
    }, "required": ["path"], "additionalProperties": False}

    async def answer(self, args: dict[str, Any], file: Path, line: int, character: int) -> str:
        found = await self.language.references(file, line, character, args.get("includeDeclaration", True))
        return await self.render_locations(found, "references")


class SymbolsTool(LanguageTool):
    name = "symbols"
    description = ("The symbols the editor's language servers know: of one file as an outline (path), or "
                   "across the workspace by name (query).")
    parameters = {"type": "object", "properties": {
        "path": {"type": "string", "description": "a file, relative to the workspace: its outline"},
        "query": {"type": "string", "minLength": 1, "description": "a name (or part of one) to find anywhere"},
    }, "additionalProperties": False}

    async def run(self, args: dict[str, Any], cancel: CancelToken, on_update: ToolUpdate) -> ToolResult:
        if ("path" in args) == ("query" in args):
            return failure("give either path (a file's outline) or query (a name to find), not both or neither")
        features = self.language.features
        if "path" in args:
            if "documentSymbols" not in features:
                return failure("the editor does not answer a file's symbols; use query")
            _, target = await self.lines(args["path"])

            async def answer() -> str:
                outline: list[str] = []
                self._outline(await self.language.document_symbols(target), 0, outline)
                more = len(outline) - MAX_ITEMS
                text = "\n".join(outline[:MAX_ITEMS]) + (f"\n[{more} more not shown]" if more > 0 else "")
                return text or f"no symbols in {args['path']}"
            return await self.known(target, answer, cancel)
        if "workspaceSymbols" not in features:
            return failure("the editor does not search the workspace's symbols; use path")
        found = await self.language.workspace_symbols(args["query"])
        shown: list[str] = []
        texts: dict[str, list[str] | None] = {}
        for s in found[:MAX_ITEMS]:
            label = f"{_kind(s.kind)} {s.name}" + (f" (in {s.container_name})" if s.container_name else "")
            shown.append(await self.render_at(s.location.uri, s.location.range.start.line,
                                              s.location.range.start.character, label, texts))
        more = len(found) - MAX_ITEMS
        return ToolResult.text("\n".join(shown) + (f"\n[{more} more not shown]" if more > 0 else "")
                               if shown else f"no symbol matches {args['query']!r}")

    def _outline(self, symbols: list[Any], depth: int, out: list[str]) -> None:
        for s in symbols:
            out.append(f"{'  ' * depth}{_kind(s.kind)} {s.name} (line {s.selection_range.start.line + 1})")
            self._outline(s.children or [], depth + 1, out)


class HoverTool(PlaceTool):
    name = "hover"
    description = ("What the editor's language server says about a symbol (its type, signature and "
                   "documentation): name the place (path, line, and the symbol's name or column).")

    async def answer(self, args: dict[str, Any], file: Path, line: int, character: int) -> str:
        found = await self.language.hover(file, line, character)
        text = _hover_text(found.contents) if found is not None else ""
        return text.strip() or "the language server has nothing to say about it"


def _kind(kind: Any) -> str:
    """lsprotocol's ``SymbolKind`` in words: ``EnumMember`` -> ``enum member``."""
    name = getattr(kind, "name", None)
    return re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower() if name else "symbol"


def _severity(d: Any) -> str:
    """lsprotocol's ``DiagnosticSeverity`` as a word; absent means an error (LSP's rule)."""
    return d.severity.name.lower() if d.severity is not None else "error"


def _hover_text(contents: Any) -> str:
    """LSP's hover contents (markup, a marked string, or a list of them) as text."""
    if isinstance(contents, list):
        return "\n\n".join(_hover_text(c) for c in contents)
    if isinstance(contents, str):
        return contents
    value = getattr(contents, "value", "")
    language = getattr(contents, "language", None)
    return f"```{language}\n{value}\n```" if language else str(value)


def _key(d: Any) -> tuple[Any, ...]:
    """What makes two diagnostics the same problem, wherever the change moved its line."""
    return int(d.severity or 1), d.message, d.source, str(d.code)


class CheckedEdit(Tool):
    """``write`` or ``edit``, then the errors and warnings the change introduced."""

    def __init__(self, inner: Tool, workspace: Any, language: LanguageAccess, wait_ms: Callable[[], int]) -> None:
        self.inner, self.workspace, self.language, self.wait_ms = inner, workspace, language, wait_ms
        self.name, self.label, self.description = inner.name, inner.label, inner.description
        self.parameters, self.sequential, self.read_only = inner.parameters, inner.sequential, inner.read_only

    async def _problems(self, target: Path, wait_ms: int | None) -> list[Any] | None:
        try:
            found = await self.language.diagnostics([target], wait_ms)
        except OSError:
            return None  # the check is a help, never the edit's failure
        return [d for _, diagnostics in found for d in diagnostics if int(d.severity or 1) <= 2]

    async def propose(self, args: dict[str, Any]) -> Proposal | None:
        return await self.inner.propose(args)

    async def execute(self, call_id: str, args: dict[str, Any], cancel: CancelToken,
                      on_update: ToolUpdate) -> ToolResult | str:
        return await self._checked(args, lambda: self.inner.execute(call_id, args, cancel, on_update))

    async def execute_accepted(self, call_id: str, args: dict[str, Any], proposal: Proposal, text: str,
                               cancel: CancelToken, on_update: ToolUpdate) -> ToolResult | str:
        return await self._checked(args, lambda: self.inner.execute_accepted(call_id, args, proposal, text, cancel,
                                                                             on_update))

    async def _checked(self, args: dict[str, Any], run: Callable[[], Awaitable[ToolResult | str]]) -> ToolResult | str:
        try:
            target = self.workspace.locate(args.get("path"), READ).path
        except PathRefused:
            return await run()  # it says why
        before = await self._problems(target, None)
        result = await run()
        if before is None or not isinstance(result, ToolResult) or result.is_error:
            return result
        after = await self._problems(target, self.wait_ms())
        if after is None:
            return result
        remaining = [_key(d) for d in before]
        introduced = []
        for d in after:
            if _key(d) in remaining:
                remaining.remove(_key(d))
            else:
                introduced.append(d)
        if not introduced:
            return result
        errors = sum(1 for d in introduced if int(d.severity or 1) == 1)
        lines = [f"{self.workspace.show(target)}:{d.range.start.line + 1}:{d.range.start.character + 1} "
                 f"{_severity(d)}: {d.message.splitlines()[0] if d.message else ''}"
                 for d in introduced[:MAX_ITEMS]]
        note = (f"\n\nThis change introduced {errors} error(s) and {len(introduced) - errors} warning(s) "
                "(the editor's language servers):\n" + "\n".join(lines))
        details = dict(result.details) if isinstance(result.details, dict) else {}
        details["introduced"] = [{"line": d.range.start.line + 1, "column": d.range.start.character + 1,
                                  "severity": _severity(d), "message": d.message,
                                  "source": d.source} for d in introduced]
        return ToolResult(content=[*result.content, TextContent(text=note)], details=details,
                          is_error=result.is_error)


def checked_edits(tools: list[Any], workspace: Any, language: LanguageAccess,
                  wait_ms: Callable[[], int]) -> list[Any]:
    """``tools`` with ``write`` and ``edit`` checked, when the client reports diagnostics."""
    if "diagnostics" not in language.features:
        return tools
    return [CheckedEdit(t, workspace, language, wait_ms) if t.name in ("write", "edit") else t for t in tools]


def language_tools(workspace: Any, files: Any, language: LanguageAccess) -> list[Tool]:
    """The tools the client's language features support; none without any."""
    features = language.features
    tools: list[Tool] = []
    for needs, cls in ((("diagnostics",), DiagnosticsTool), (("definition",), DefinitionTool),
                       (("references",), ReferencesTool), (("documentSymbols", "workspaceSymbols"), SymbolsTool),
                       (("hover",), HoverTool)):
        if any(n in features for n in needs):
            tools.append(cls(workspace, files, language))
    return tools
