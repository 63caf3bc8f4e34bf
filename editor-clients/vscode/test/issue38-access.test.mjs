// Issue #38's client side of model access, Stop, the review and the language and sandbox words, against
// the real daemon: a refused key named, replaced and removed (and a removed key not sent at the next
// start), the chosen model as the default of new sessions and the next start, Stop giving the queue back
// into the chat's input, the user's version of an edit written, a file no language server covers said
// so, the bash prompt saying whether the command runs sandboxed, and the offline demo naming VS Code's
// model picker.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { openView, useBrowser } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";
import { fakeAnthropic, WRONG_KEY_MESSAGE } from "../test-support/anthropic.mjs";

const require = createRequire(import.meta.url);
const { PiClient, MODEL_PICKER, permissionPrompt, returnedInput } = require("../dist/rpcClient.js");
const { accessLine, authFailure, removeKey, sendStoredKeys, storeKey } = require("../dist/modelKeys.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";
const held = useBrowser();
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const text = (t) => ({ content: [{ type: "text", text: t }] });

// A project and a daemon home of its own (no real keys, no user Pi files); `models`: the home's models.json.
function project(replies, { models, settings } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-vscode-38-"));
  const home = join(dir, "home");
  mkdirSync(home);
  if (models) writeFileSync(join(home, "models.json"), JSON.stringify(models));
  if (settings) writeFileSync(join(home, "settings.json"), JSON.stringify(settings));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies: replies ?? [], delayMs: 5 }));
  return { dir, home };
}

function daemon({ dir, home }, options = {}, args = ["--faux-script", join(dir, "script.json"), "--model", "faux/script"]) {
  const env = { ...process.env, PI_DAEMON_HOME: home, PI_CODING_AGENT_DIR: join(home, "no-pi-agent") };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({ command: PYTHON, cwd: dir, env, restart: false, ...options, args: ["-m", "pi_daemon", ...args] });
  c.events = [];
  c.onEvent((_s, event) => c.events.push(event));
  c.text = () => c.events.filter((e) => e.type === "message_end" && e.message.role === "assistant")
    .flatMap((e) => e.message.content.filter((b) => b.type === "text").map((b) => b.text)).join("\n");
  c.settled = (n = 1) => waitFor(() => c.events.filter((e) => e.type === "agent_settled").length >= n, `${n} settled runs`);
  return c;
}

// VS Code's SecretStorage, in memory.
function secrets() {
  const kept = new Map();
  return { kept, get: async (k) => kept.get(k), store: async (k, v) => void kept.set(k, v), delete: async (k) => void kept.delete(k) };
}

const anthropicOf = async (c) => (await c.request("modelAccess")).providers.find((p) => p.provider === "anthropic");

test("model access: a refused key is named with its provider, replaced, removed; a removed key is not sent at the next start", async () => {
  const server = await fakeAnthropic("sk-ant-right");
  const where = project([], { models: { providers: { anthropic: { baseUrl: server.url } } } });
  const keys = secrets();
  const c = daemon(where, {}, []);
  await c.start();
  await sendStoredKeys(c, keys, () => undefined);
  assert.equal((await anthropicOf(c)).key, "none");
  assert.equal(accessLine(await anthropicOf(c)).description.split(" · ")[0], "no key");

  const { models } = await storeKey(c, keys, "anthropic", "sk-ant-wrong");
  await c.request("setModel", { provider: "anthropic", modelId: models[0].id });
  await c.prompt("hello");
  await c.settled();
  const refused = c.events.map(authFailure).find(Boolean);
  assert.equal(refused?.provider, "anthropic");
  assert.match(refused.text, /anthropic refused the credentials.*Manage Model Access/);
  assert.deepEqual(server.keys, ["sk-ant-wrong"], "an auth failure is not retried");
  const line = accessLine(await anthropicOf(c));
  assert.match(line.description, /^key entered in VS Code · \d+ models?$/);
  assert.ok(line.detail.startsWith("refused: ") && line.detail.includes("401"), line.detail);

  await storeKey(c, keys, "anthropic", "sk-ant-right"); // replaced
  await c.prompt("hello again");
  await c.settled(2);
  assert.ok(c.text().includes("Hello from the loopback Claude."), c.text());
  await c.stop();

  const next = daemon(where, {}, []); // the next start: the replacing key is the one sent
  await next.start();
  await sendStoredKeys(next, keys, () => undefined);
  assert.equal((await anthropicOf(next)).key, "client");
  const after = await removeKey(next, keys, "anthropic");
  assert.equal(after.providers.find((p) => p.provider === "anthropic").key, "none");
  await next.stop();

  const last = daemon(where, {}, []);
  await last.start();
  await sendStoredKeys(last, keys, () => undefined);
  assert.equal((await anthropicOf(last)).key, "none", "the removed key was not sent again");
  assert.equal(keys.kept.size, 0);
  await last.stop();
  server.close();
  assert.ok(!WRONG_KEY_MESSAGE.includes("sk-ant"));
});

test("the model chosen is the default: a new chat and the next start begin on it", async () => {
  const where = project([]);
  const c = daemon(where, {}, []);
  await c.start();
  assert.equal((await c.request("getState")).model, null);
  await c.request("setModel", { provider: "faux", modelId: "echo" }); // what pi: Select Model sends
  const { sessionId } = await c.request("session/new"); // a new chat tab's session
  const state = await c.request("getState", { sessionId });
  assert.equal(`${state.model.provider}/${state.model.id}`, "faux/echo");
  await c.stop();
  const next = daemon(where, {}, []);
  await next.start();
  const again = await next.request("getState");
  assert.equal(`${again.model.provider}/${again.model.id}`, "faux/echo");
  assert.equal(JSON.parse(readFileSync(join(where.home, "settings.json"), "utf8")).defaultModel, "echo");
  await next.stop();
});

test("Stop gives the queued messages back into the chat's input, before what is typed, and says so", async () => {
  const where = project([]);
  writeFileSync(join(where.dir, "script.json"), JSON.stringify({ modelId: "script", chunkSize: 2, delayMs: 20,
                                                                  replies: [text("a long answer ".repeat(400)), text("never")] }));
  const c = daemon(where);
  const returned = [];
  c.onQueueReturned((sessionId, texts) => returned.push(texts));
  await c.start();
  await c.prompt("start");
  await waitFor(() => c.events.some((e) => e.type === "message_update"), "the answer streaming");
  await c.prompt("steer this way", "steer");
  await c.prompt("and then this", "followUp");
  await waitFor(() => c.events.some((e) => e.type === "queue_update" && e.steering.length + e.followUp.length === 2), "both queued");
  await c.abort();
  await c.settled();
  assert.deepEqual(returned, [["steer this way", "and then this"]]);
  const { messages } = await c.request("getMessages");
  assert.deepEqual(messages.filter((m) => m.role === "user").map((m) => m.content[0]?.text ?? m.content), ["start"]);
  assert.equal((await c.request("getState")).pendingMessageCount, 0);
  await c.stop();

  const page = await openView(held.browser);
  await page.fill("#input", "my draft");
  await page.evaluate((m) => window.postMessage(m, "*"), { type: "restoreInput", ...returnedInput(returned[0]) });
  await page.locator(".notice", { hasText: "The 2 queued messages were not sent: they are back in the input." }).waitFor();
  assert.equal(await page.inputValue("#input"), "steer this way\n\nand then this\n\nmy draft");
  await page.close();
});

test("the review's version is written: the daemon proposes the whole text, the user's changes are what lands, the model is told", async () => {
  const where = project([
    call("e", "edit", { path: "notes.txt", edits: [{ oldText: "beta\n", newText: "BETA\n" }, { oldText: "delta\n", newText: "DELTA\n" }] }),
    call("w", "write", { path: "new.txt", content: "made by pi\n" }),
    text("done"),
  ]);
  writeFileSync(join(where.dir, "notes.txt"), "alpha\nbeta\ngamma\ndelta\n");
  const proposed = [];
  const onPermission = async (request) => {
    proposed.push(request.proposed);
    // the first hunk kept, the second reverted, a line typed by hand
    return request.toolCallId === "e" ? { outcome: "allow_once", content: "alpha\nBETA\ngamma\ndelta\nmine\n" } : "allow_once";
  };
  const c = daemon(where, { onPermission });
  await c.start();
  await c.prompt("change the notes");
  await c.settled();
  assert.equal(proposed[0].text, "alpha\nBETA\ngamma\nDELTA\n");
  assert.equal(proposed[0].exists, true);
  assert.deepEqual([proposed[1].text, proposed[1].exists], ["made by pi\n", false]);
  assert.equal(readFileSync(join(where.dir, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\ndelta\nmine\n");
  assert.equal(readFileSync(join(where.dir, "new.txt"), "utf8"), "made by pi\n");
  const result = c.events.find((e) => e.type === "tool_execution_end" && e.toolCallId === "e").result;
  assert.match(result.content[0].text, /The user changed your edit before accepting it/);
  assert.equal(result.details.userEdited, true);
  await c.stop();
});

test("a file no language server covers is said so, never 'no errors'; a loading project is waited for", async () => {
  const where = project([call("d", "diagnostics", { paths: ["broken.py"] }), call("s", "definition", { path: "main.ts", line: 1, symbol: "double" }),
                         text("done")]);
  writeFileSync(join(where.dir, "broken.py"), "def broken(:\n");
  writeFileSync(join(where.dir, "main.ts"), "double(2);\n");
  let polls = 0;
  const language = {
    features: { diagnostics: true, definition: true, status: true },
    diagnostics: async ({ uris }) => ({ items: (uris ?? []).map((uri) => ({ uri, diagnostics: [] })) }),
    definition: async () => [],
    // TypeScript loads for three polls, then is ready; nothing covers Python
    languageStatus: async ({ uri }) => uri.endsWith(".py") ? { servers: [], loading: [] }
      : { servers: ["TypeScript"], loading: ++polls <= 3 ? ["TypeScript"] : [] },
  };
  const c = daemon(where, { language });
  await c.start();
  await c.prompt("check");
  await c.settled();
  const results = c.events.filter((e) => e.type === "tool_execution_end").map((e) => e.result.content[0].text);
  assert.match(results[0], /no language server in the editor covers broken\.py/);
  assert.doesNotMatch(results[0], /no errors or warnings/);
  assert.ok(polls > 3, "the definition waited for the project");
  assert.doesNotMatch(results[1], /^Partial/);
  await c.stop();
});

test("the bash prompt says whether the command runs sandboxed, as the daemon then runs it", async () => {
  for (const settings of [{ sandbox: { enabled: false } }, {}]) {
    const where = project([call("b", "bash", { command: "echo hi" }), text("ran")], { settings });
    let detail;
    const c = daemon(where, { onPermission: async (request) => {
      detail = permissionPrompt(request, (await c.request("getState", { sessionId: request.sessionId })).sandbox).detail;
      return "allow_once";
    } });
    await c.start();
    await c.prompt("run it");
    await c.settled();
    const ran = c.events.find((e) => e.type === "tool_execution_end").result.details;
    const said = detail.split("\n\n")[1];
    assert.equal(said.startsWith("Sandboxed: yes"), ran.sandboxed, `${said} / sandboxed: ${ran.sandboxed}`);
    if (settings.sandbox) assert.equal(said, "Sandboxed: no (switched off in settings (sandbox.enabled)): it runs with all your rights.");
    await c.stop();
  }
});

test("the offline demo and 'no model' point at VS Code's model picker, not --model", async () => {
  const where = project([]);
  const c = daemon(where, {}, []);
  await c.start();
  const refused = await c.prompt("hello").catch((error) => error);
  assert.equal(refused.code, -32004);
  await c.request("setModel", { provider: "faux", modelId: "echo" });
  await c.prompt("hello");
  await c.settled();
  assert.ok(c.text().includes(MODEL_PICKER), c.text());
  assert.ok(!c.text().includes("--model"), c.text());
  await c.stop();
});
