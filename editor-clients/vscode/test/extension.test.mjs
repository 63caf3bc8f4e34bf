// The extension's surface that does not need VS Code: its manifest, the status bar's text and
// the permission prompt, against the real daemon.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { PiClient, permissionPrompt } = require("../dist/rpcClient.js");
const { statusText } = require("../dist/status.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

function daemon(replies, daemonArgs = [], options = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-ext-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies }));
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({ command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"),
                                                   "--model", "faux/script", ...daemonArgs], cwd: dir, env, ...options });
  c.dir = dir;
  return c;
}

test("the extension activates when pi is used, and after the window has started: never during start-up, never from the folder's content", () => {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url)));
  // commands activate it implicitly; a chat tab reopened with the window does too; onStartupFinished lets it start
  // the daemon early where the user's own record says pi was used (e2e/flows42-prestart.mjs), after the window
  // is up ("*" would hold start-up); workspaceContains would let a repository decide
  assert.deepEqual(manifest.activationEvents, ["onView:pi.chat", "onWebviewPanel:pi.chatTab", "onStartupFinished"]);
});

test("the status bar shows the model from the start, then tokens, cost and context", async () => {
  const c = daemon([{ content: [{ type: "text", text: "hello" }] }]);
  await c.start();
  assert.equal(await statusText(c), "π faux/script"); // no session yet: no error, no "not running"
  let settled = false;
  c.onEvent((_id, event) => { if (event.type === "agent_settled") settled = true; });
  await c.prompt("hi");
  while (!settled) await new Promise((r) => setTimeout(r, 20));
  assert.match(await statusText(c), /^π faux\/script · \d+ tok · \$0\.0000 · \d+% context$/);
  await c.stop();
});

test("the permission prompt shows what will happen and the exact rule that would be kept", async () => {
  const edit = { path: "notes.txt", edits: [{ oldText: "old line", newText: "new line\nsecond" }] };
  const replies = [
    { content: [{ type: "toolCall", id: "w", name: "write", arguments: { path: "made.txt", content: "line 1\nline 2" } }], stopReason: "toolUse" },
    { content: [{ type: "toolCall", id: "e", name: "edit", arguments: edit }], stopReason: "toolUse" },
    { content: [{ type: "toolCall", id: "b", name: "bash", arguments: { command: "git status --short" } }], stopReason: "toolUse" },
    { content: [{ type: "text", text: "done" }] },
  ];
  const asked = [];
  const c = daemon(replies, [], { onPermission: async (request) => (asked.push(request), "reject_once") });
  writeFileSync(join(c.dir, "notes.txt"), "old line\n");
  let settled = false;
  c.onEvent((_id, event) => { if (event.type === "agent_settled") settled = true; });
  await c.start();
  await c.prompt("go");
  while (!settled) await new Promise((r) => setTimeout(r, 20));
  const [write, editing, bash] = asked.map((request) => permissionPrompt(request));
  assert.ok(write.detail.startsWith("made.txt\nline 1\nline 2\n\n"), write.detail);
  assert.ok(editing.detail.startsWith("notes.txt\n- old line\n+ new line\n+ second"), editing.detail);
  assert.ok(bash.detail.startsWith("$ git status --short"), bash.detail);
  // short fixed buttons; the rule they would keep is said in full in the body
  assert.deepEqual(write.choices.map((x) => x.label), ["Allow once", "Allow for this session", "Always allow…", "Reject",
                                                      "Reject with reason…", "Always reject…", "Reject and stop"]);
  assert.ok(write.detail.endsWith('"Allow for this session", "Always allow…", "Always reject…" remember: write calls on `made.txt`'), write.detail);
  assert.ok(bash.detail.endsWith(`remember: ${asked[2].remember.label}`), bash.detail);
  await c.stop();
});
