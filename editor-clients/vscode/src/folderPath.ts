// Whether a relative name stays inside a folder: a file name from the model's text (a link in the
// chat) is opened only when it does. No `vscode` import: node --test drives it.

import * as path from "path";

// The file `name` means inside `folder`, or undefined when it is not inside it (absolute, "..").
export function insideFolder(folder: string, name: string): string | undefined {
  if (path.isAbsolute(name)) return undefined;
  const resolved = path.resolve(folder, name);
  const relative = path.relative(folder, resolved);
  return relative && !relative.startsWith("..") && !path.isAbsolute(relative) ? resolved : undefined;
}
