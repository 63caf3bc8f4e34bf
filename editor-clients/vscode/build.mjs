// Bundles the extension (vscode stays external), the chat view's script (with markdown-it)
// for the webview, and the modules the tests load.
import { build } from "esbuild";

const common = { bundle: true, platform: "node", target: "node18", format: "cjs", sourcemap: true, logLevel: "warning" };
await build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", external: ["vscode"] });
await build({ ...common, entryPoints: ["src/rpcClient.ts"], outfile: "dist/rpcClient.js" });
await build({ ...common, entryPoints: ["src/chatHtml.ts"], outfile: "dist/chatHtml.js" });
await build({ ...common, entryPoints: ["src/status.ts"], outfile: "dist/status.js" });
await build({ bundle: true, platform: "browser", target: "es2020", format: "iife", sourcemap: false, logLevel: "warning",
              entryPoints: ["src/webview/chat.ts"], outfile: "dist/webview.js", minify: true });
await build({ ...common, entryPoints: ["src/editorFs.ts"], outfile: "dist/editorFs.js" });
for (const name of ["rewind", "modes", "subagents", "fileLinks", "folderPath", "editDiff", "sessionList", "modelKeys", "daemonLocator", "daemonInstall", "processes", "userQuestions", "compactReply", "crashRecovery"])
  await build({ ...common, entryPoints: [`src/${name}.ts`], outfile: `dist/${name}.js` });
