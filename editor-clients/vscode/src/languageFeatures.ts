// The editor's language servers as the agent's: the daemon's editor/* requests answered with
// what VS Code's language features know (the built-in TypeScript/JavaScript support, or any
// language extension), converted to LSP's shapes. Positions are LSP's and VS Code's alike
// (0-based lines, UTF-16 characters); symbol kinds and severities are shifted by one. Also which
// of them cover a file and which still load (editor/languageStatus), as far as VS Code can tell.
import * as vscode from "vscode";
import type {
  Diagnostic, DiagnosticsParams, DiagnosticsResult, DocumentSymbol, DocumentSymbolsParams, Hover, LanguageFeatures,
  LanguageStatusParams, LanguageStatusResult,
  Location, Range, ReferencesParams, SymbolInformation, TextDocumentPositionParams, WorkspaceSymbolsParams,
} from "./protocol";

export interface LanguageHandlers {
  features: LanguageFeatures;
  diagnostics(params: DiagnosticsParams): Promise<DiagnosticsResult>;
  definition(params: TextDocumentPositionParams): Promise<Location[]>;
  references(params: ReferencesParams): Promise<Location[]>;
  documentSymbols(params: DocumentSymbolsParams): Promise<DocumentSymbol[]>;
  workspaceSymbols(params: WorkspaceSymbolsParams): Promise<SymbolInformation[]>;
  hover(params: TextDocumentPositionParams): Promise<Hover | null>;
  languageStatus?(params: LanguageStatusParams): Promise<LanguageStatusResult>;
}

// After a report on a changed file, how long to wait for another: servers report in steps (TypeScript: syntax,
// then semantics, which can take seconds on a cold project), so a report of no problems waits longer.
const QUIET_MS = 400;
const QUIET_CLEAN_MS = 2500;

const range = (r: vscode.Range): Range => ({
  start: { line: r.start.line, character: r.start.character },
  end: { line: r.end.line, character: r.end.character },
});
const location = (l: vscode.Location | vscode.LocationLink): Location =>
  "targetUri" in l
    ? { uri: l.targetUri.toString(), range: range(l.targetSelectionRange ?? l.targetRange) }
    : { uri: l.uri.toString(), range: range(l.range) };
const position = (p: TextDocumentPositionParams) => new vscode.Position(p.position.line, p.position.character);

function diagnostic(d: vscode.Diagnostic): Diagnostic {
  const code = typeof d.code === "object" && d.code !== null ? d.code.value : d.code;
  return { range: range(d.range), message: d.message, severity: d.severity + 1, code: code ?? null, source: d.source ?? null };
}

function symbol(s: vscode.DocumentSymbol | vscode.SymbolInformation): DocumentSymbol {
  if ("children" in s) {
    return { name: s.name, kind: s.kind + 1, range: range(s.range), selectionRange: range(s.selectionRange),
             detail: s.detail || null, children: s.children.map(symbol) };
  }
  return { name: s.name, kind: s.kind + 1, range: range(s.location.range), selectionRange: range(s.location.range) };
}

function markdown(content: vscode.MarkdownString | vscode.MarkedString): string {
  if (typeof content === "string") return content;
  if ("language" in content) return "```" + content.language + "\n" + content.value + "\n```";
  return content.value;
}

// The diagnostics of files the agent just changed, once their language servers have reported on
// the change: wait for a report on one of them, then for a quiet moment, at most `waitMs` in all.
// A file no language extension serves (plain text) is answered at once.
function settled(uris: vscode.Uri[], waitMs: number): Promise<void> {
  const watched = uris.some((u) => vscode.languages.getDiagnostics(u).length > 0 || isServed(u));
  if (!watched || waitMs <= 0) return Promise.resolve();
  const wanted = new Set(uris.map((u) => u.toString()));
  return new Promise((resolve) => {
    let quiet: NodeJS.Timeout | undefined;
    const done = () => {
      clearTimeout(limit);
      clearTimeout(quiet);
      listener.dispose();
      resolve();
    };
    const limit = setTimeout(done, waitMs);
    const listener = vscode.languages.onDidChangeDiagnostics((event) => {
      if (!event.uris.some((u) => wanted.has(u.toString()))) return;
      clearTimeout(quiet);
      const problems = uris.some((u) => vscode.languages.getDiagnostics(u).length > 0);
      quiet = setTimeout(done, problems ? QUIET_MS : QUIET_CLEAN_MS);
    });
  });
}

// The file open as a document, and the extensions of its language active (they register their providers
// when they start; until then VS Code's provider commands find none).
async function ready(uri: vscode.Uri): Promise<void> {
  const document = await vscode.workspace.openTextDocument(uri);
  const event = `onLanguage:${document.languageId}`;
  await Promise.all(vscode.extensions.all
    .filter((e) => !e.isActive && (e.packageJSON?.activationEvents ?? []).includes(event))
    .map((e) => Promise.resolve(e.activate()).catch(() => undefined)));
}

// Whether some language extension handles the file's language (its document is open: the agent's
// edits go through the editor). Plain text has none.
function isServed(uri: vscode.Uri): boolean {
  const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  return document !== undefined && !["plaintext", "markdown", "log"].includes(document.languageId);
}

// The language extensions that cover a document: those its language activates (`onLanguage:<id>` in
// their manifest). VS Code has no API listing the providers registered for a document, so an
// extension activated another way (`*`, onStartupFinished, workspaceContains) is not seen here.
function coveringExtensions(document: vscode.TextDocument): vscode.Extension<unknown>[] {
  const event = `onLanguage:${document.languageId}`;
  return vscode.extensions.all.filter((e) => (e.packageJSON?.activationEvents ?? []).includes(event));
}

const extensionName = (e: vscode.Extension<unknown>) => {
  const shown = e.packageJSON?.displayName;
  return typeof shown === "string" && shown && !shown.startsWith("%") ? shown : e.id;
};

// Whether TypeScript is still loading the file's project. Of VS Code's language servers only its
// extension can be asked: a semantic request through its `typescript.tsserverRequest` command waits
// behind the project's loading (`semanticDiagnosticsSync`: while a project loads, quickinfo or
// definition go to the syntax-only server, which answers at once), so one not answered within
// PROBE_MS means loading. One probe per file: once answered, its project is loaded (a busy server
// would make a fresh probe late again).
const TYPESCRIPT = "vscode.typescript-language-features";
const PROBE_MS = 300;
const probes = new Map<string, Promise<void>>();

async function typescriptLoading(uri: vscode.Uri): Promise<boolean> {
  let probe = probes.get(uri.toString());
  if (!probe) {
    probe = Promise.resolve(vscode.commands.executeCommand("typescript.tsserverRequest", "semanticDiagnosticsSync", { file: uri }))
      .then(() => undefined, () => undefined);
    probes.set(uri.toString(), probe);
  }
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), PROBE_MS)));
  const loading = await Promise.race([probe.then(() => false), late]);
  clearTimeout(timer);
  return loading;
}

export function vscodeLanguage(): LanguageHandlers {
  const uri = (text: string) => vscode.Uri.parse(text);
  const run = <T>(command: string, ...args: unknown[]) =>
    Promise.resolve(vscode.commands.executeCommand<T>(command, ...args)).then((found) => found ?? undefined);
  return {
    features: { diagnostics: true, definition: true, references: true, documentSymbols: true, workspaceSymbols: true,
                hover: true, status: true },
    async languageStatus(params) {
      const target = uri(params.uri);
      const document = await vscode.workspace.openTextDocument(target).then((d) => d, () => undefined);
      if (!document) return { servers: [], loading: [] }; // no file: nothing covers it
      await ready(target);
      const covering = coveringExtensions(document);
      const typescript = covering.find((e) => e.id === TYPESCRIPT);
      const loading = typescript && (await typescriptLoading(target)) ? [extensionName(typescript)] : [];
      return { servers: covering.map(extensionName), loading };
    },
    async diagnostics(params) {
      const uris = params.uris?.map(uri);
      if (uris) await Promise.all(uris.map((u) => ready(u).catch(() => undefined))); // a file gone has none
      if (uris && params.waitMs) await settled(uris, params.waitMs);
      const found: [vscode.Uri, vscode.Diagnostic[]][] = uris
        ? uris.map((u) => [u, vscode.languages.getDiagnostics(u)])
        : vscode.languages.getDiagnostics();
      return { items: found.map(([u, list]) => ({ uri: u.toString(), diagnostics: list.map(diagnostic) })) };
    },
    async definition(params) {
      await ready(uri(params.uri));
      const found = await run<(vscode.Location | vscode.LocationLink)[]>(
        "vscode.executeDefinitionProvider", uri(params.uri), position(params));
      return (found ?? []).map(location);
    },
    async references(params) {
      await ready(uri(params.uri));
      const found = await run<vscode.Location[]>("vscode.executeReferenceProvider", uri(params.uri),
        new vscode.Position(params.position.line, params.position.character));
      return (found ?? []).map(location);
    },
    async documentSymbols(params) {
      await ready(uri(params.uri));
      const found = await run<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>(
        "vscode.executeDocumentSymbolProvider", uri(params.uri));
      return (found ?? []).map(symbol);
    },
    async workspaceSymbols(params) {
      const found = await run<vscode.SymbolInformation[]>("vscode.executeWorkspaceSymbolProvider", params.query);
      return (found ?? []).map((s) => ({ name: s.name, kind: s.kind + 1, location: location(s.location),
                                          containerName: s.containerName || null }));
    },
    async hover(params) {
      await ready(uri(params.uri));
      const found = await run<vscode.Hover[]>("vscode.executeHoverProvider", uri(params.uri), position(params));
      const parts = (found ?? []).flatMap((h) => h.contents.map(markdown)).filter((t) => t.trim());
      return parts.length ? { contents: { kind: "markdown", value: parts.join("\n\n---\n\n") } } : null;
    },
  };
}
