// Bundles the extension (vscode stays external) and the RPC client for the tests.
import { build } from "esbuild";

const common = { bundle: true, platform: "node", target: "node18", format: "cjs", sourcemap: true, logLevel: "warning" };
await build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", external: ["vscode"] });
await build({ ...common, entryPoints: ["src/rpcClient.ts"], outfile: "dist/rpcClient.js" });
await build({ ...common, entryPoints: ["src/editorFs.ts"], outfile: "dist/editorFs.js" });
