// Issue #40: the client through `pi-daemon attach` to the workspace's server (pi.connection "attach"), against
// the real daemon: a window that goes away mid-answer leaves the run going, and the next connection catches up
// by seq (fromSeq) or by a replay that shows the run still going; a request to the user answered on one
// connection is withdrawn on the other. Each test has its own runtime folder and stops its server.
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { waitFor } from "../test-support/wait.mjs";
import { runtimeDir, serverPids, stopServers } from "../test-support/servers.mjs";

const require = createRequire(import.meta.url);
const { PiClient, Conversation } = require("../dist/rpcClient.js");
const { attachArgs } = require("../dist/daemonLocator.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (name, args) => ({ content: [{ type: "toolCall", id: `c_${name}`, name, arguments: args }], stopReason: "toolUse" });
const ANSWER = Array.from({ length: 120 }, (_, i) => `word${i}`).join(" ");

const runtimes = [];
after(() => Promise.all(runtimes.map(stopServers)));

// A workspace with a faux script, and a runtime folder of its own for its server.
function workspace(replies, options = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-attach-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies, ...options }));
  const runtime = runtimeDir();
  runtimes.push(runtime);
  return { dir, runtime };
}

// A client as the extension starts it in attach mode: the daemon's command line with `attach --workspace W`.
function client({ dir, runtime }, extra = {}) {
  const env = { ...process.env, PI_DAEMON_HOME: join(dir, ".home"), XDG_RUNTIME_DIR: runtime };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const args = attachArgs(["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script",
                           "--log-level", "warning"], dir);
  const c = new PiClient({ command: PYTHON, args, cwd: dir, env, restart: false, ...extra });
  const conversation = new Conversation();
  const events = [];
  c.onEvent((sessionId, event, seq) => {
    events.push({ event, seq });
    conversation.apply(event);
  });
  const saw = (check, what) => waitFor(() => events.some(({ event }) => check(event)), what, 30_000);
  return { c, conversation, events, saw };
}

test("attach mode puts `attach --workspace W` after the program's start, before its options", () => {
  assert.deepEqual(attachArgs(["-P", "-m", "pi_daemon", "--log-level", "info"], "/w"),
                   ["-P", "-m", "pi_daemon", "attach", "--workspace", "/w", "--log-level", "info"]);
  assert.deepEqual(attachArgs(["--model", "faux/echo"], "/w"), ["attach", "--workspace", "/w", "--model", "faux/echo"]);
});

test("a window gone mid-answer: the run goes on, the next connection catches up from its seq without a gap", async () => {
  const ws = workspace([text(ANSWER)], { chunkSize: 4, delayMs: 40 });
  const first = client(ws);
  const init = await first.c.start();
  assert.deepEqual(init.server?.shared, true, "initialize says the server is shared");
  const { sessionId } = await first.c.request("session/new");
  await first.c.prompt("tell me", undefined, sessionId);
  await first.saw((e) => e.type === "message_update" && (e.assistantMessageEvent.delta ?? "").length > 0, "the answer streaming");
  await first.c.stop(); // the window goes: its pipe closes, nothing else
  const seen = first.c.seen(sessionId);
  assert.ok(seen > 0);
  assert.equal(serverPids(ws.runtime).length, 1, "the server outlives the window");

  const second = client(ws);
  await second.c.start();
  for (const { event } of first.events) second.conversation.apply(event); // the view drawn so far, still held
  const loaded = await second.c.load(sessionId, { fromSeq: seen + 1 });
  assert.equal(loaded.catchUp, "events");
  assert.equal(loaded.state.isStreaming, true, "the run is still going");
  await second.saw((e) => e.type === "agent_settled", "the run's end");
  assert.equal(second.events[0].seq, seen + 1, "the first event after the ones seen");
  assert.equal(second.c.gaps, 0, "no event missed, none twice");
  assert.equal(second.conversation.text(), ANSWER, "the whole answer, the part before and after the window went");
  await second.c.stop();
});

test("a reloaded window replays the conversation and shows the run still going; Stop stops it", async () => {
  const ws = workspace([text("first answer"), text(ANSWER)], { chunkSize: 2, delayMs: 25 });
  const first = client(ws);
  await first.c.start();
  const { sessionId } = await first.c.request("session/new");
  await first.c.prompt("one", undefined, sessionId);
  await first.saw((e) => e.type === "agent_settled", "the first answer");
  await first.c.prompt("two", undefined, sessionId);
  const answer = ({ conversation }) => (conversation.messages.length === 4 ? conversation.text().slice("first answer\n".length) : "");
  await waitFor(() => answer(first).length >= 20, "the second answer streaming", 30_000);
  const shownBefore = answer(first);
  await first.c.stop();

  const second = client(ws);
  await second.c.start();
  const loaded = await second.c.load(sessionId); // replay: the view is empty after a reload
  assert.equal(loaded.state.isStreaming, true);
  // the answer being written follows the replay, from its start (what the first window showed), then goes on
  await waitFor(() => answer(second).length > shownBefore.length, "the answer arriving after the replay", 30_000);
  const said = second.conversation.messages.map((m) => `${m.role}: ${m.blocks.map((b) => b.text ?? "").join("")}`);
  assert.deepEqual(said.slice(0, 3), ["user: one", "assistant: first answer", "user: two"]);
  assert.ok(answer(second).startsWith(shownBefore), `${answer(second)} starts with ${shownBefore}`);
  assert.equal(second.c.gaps, 0, "replayed events carry no seq to check");
  await second.c.abort(sessionId);
  await second.saw((e) => e.type === "agent_settled", "the run stopped");
  await second.c.stop();
});

test("a permission request answered on one connection is withdrawn on the other", async () => {
  const ws = workspace([call("write", { path: "made.txt", content: "x" }), text("written")]);
  const withdrawn = [];
  let answer;
  const asked = new Promise((resolve) => (answer = resolve));
  const one = client(ws, { onPermission: (_request, cancelled) => new Promise(() => cancelled.then(() => withdrawn.push("one"))) });
  const two = client(ws, { onPermission: () => (answer(), "allow_once") });
  await one.c.start();
  const { sessionId } = await one.c.request("session/new");
  await two.c.start();
  await two.c.load(sessionId);
  await one.c.prompt("write it", undefined, sessionId);
  await asked;
  await one.saw((e) => e.type === "agent_settled", "the run's end");
  await waitFor(() => withdrawn.length === 1, "the other connection's request withdrawn");
  await one.c.stop();
  await two.c.stop();
});
