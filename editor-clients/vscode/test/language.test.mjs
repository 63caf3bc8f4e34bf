// The client's side of the editor's language servers against the real daemon: the features are
// declared in initialize, each editor/* request reaches its handler, and the agent's tools use it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { PiClient } = require("../dist/rpcClient.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const span = (line, start, end) => ({ start: { line, character: start }, end: { line, character: end } });

test("language features: declared, asked through their handlers, shown to the model", async () => {
  const dir = mkdtempSync(join(tmpdir(), "pi-vscode-lang-"));
  writeFileSync(join(dir, "util.ts"), "export function double(n: number) {\n  return n * 2;\n}\n");
  writeFileSync(join(dir, "main.ts"), 'import { double } from "./util";\ndouble(2);\n');
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies: [
    call("d", "definition", { path: "main.ts", line: 2, symbol: "double" }),
    call("g", "diagnostics", {}),
    { content: [{ type: "text", text: "done" }] },
  ] }));
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const asked = [];
  const answer = (method, result) => async (params) => { asked.push([method, params]); return result; };
  const util = `file://${join(dir, "util.ts")}`;
  const c = new PiClient({
    command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script"],
    cwd: dir, env, restart: false,
    language: {
      features: { diagnostics: true, definition: true },
      definition: answer("editor/definition", [{ uri: util, range: span(0, 16, 22) }]),
      diagnostics: answer("editor/diagnostics", { items: [{ uri: util, diagnostics: [
        { range: span(1, 2, 8), message: "Unreachable code detected.", severity: 2, source: "ts", code: 7027 }] }] }),
    },
  });
  const events = [];
  c.onEvent((_s, event) => events.push(event));
  const init = await c.start();
  assert.deepEqual(init.capabilities.languageFeatures, { diagnostics: true, definition: true, references: false,
                                                        documentSymbols: false, workspaceSymbols: false, hover: false, status: false });
  await c.prompt("where is double?");
  for (let i = 0; i < 2000 && !events.some((e) => e.type === "agent_settled"); i++) await new Promise((r) => setTimeout(r, 10));
  const texts = events.filter((e) => e.type === "tool_execution_end").map((e) => e.result.content[0].text);
  assert.deepEqual(texts, ["util.ts:1:17\n    export function double(n: number) {",
                           "0 error(s), 1 warning(s)\nutil.ts:2:3 warning: Unreachable code detected. [ts 7027]\n    return n * 2;"]);
  assert.deepEqual(asked.map(([m]) => m), ["editor/definition", "editor/diagnostics"]);
  assert.deepEqual(asked[0][1].position, { line: 1, character: 0 });
  await c.stop();
});
