// File names in the chat's answers: which words name a file of the workspace (the chat makes them
// links; openFile.ts opens one). No `vscode` import: the webview bundles it and node --test drives it.

// A relative path with an extension, and a ":line" after it (core.py, src/app.ts:12).
export const FILE_NAME = /(?:[\w.-]+\/)*[\w-][\w.-]*\.[A-Za-z]\w{0,9}(?::(\d+))?/g;

// The workspace file `name` means: its path as given, or the one file of that name in a folder.
export function fileFor(files: string[], name: string): string | undefined {
  const clean = name.replace(/^\.\//, "");
  if (files.includes(clean)) return clean;
  const found = files.filter((f) => f.endsWith(`/${clean}`));
  return found.length === 1 ? found[0] : undefined;
}
