// The VS Code client's RPC module against the real daemon (spawned with scripted models).
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient, Conversation, Commands, permissionPrompt, outline } = require("../dist/rpcClient.js");
const Ajv2020 = require("ajv/dist/2020").default;

// Everything the daemon sends these tests is checked against protocol.schema.json.
const SCHEMA = JSON.parse(readFileSync(new URL("../../../protocol.schema.json", import.meta.url), "utf8"));
const ajv = new Ajv2020({ strict: false });
ajv.addSchema(SCHEMA);
const validators = new Map();
const violations = [];
function check(what, ref, value) {
  if (!ref) return;
  const key = SCHEMA.$id + ref.$ref;
  if (!validators.has(key)) validators.set(key, ajv.compile({ $ref: key }));
  const validate = validators.get(key);
  if (!validate(value)) violations.push(`${what}: ${ajv.errorsText(validate.errors)}`);
}
afterEach(() => assert.deepEqual(violations.splice(0), [], "frames that do not fit protocol.schema.json"));
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

function workspace(replies, options = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-vscode-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies, ...options }));
  return dir;
}

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (name, args) => ({ content: [{ type: "toolCall", id: `c_${name}`, name, arguments: args }], stopReason: "toolUse" });

function client(dir, extra = {}) {
  for (const [option, method] of [["onPermission", "permission/request"], ["onWorkspaceTrust", "workspace/trust"]]) {
    const answer = extra[option];
    if (answer) {
      extra = { ...extra, [option]: (params) => {
        check(`${method} params`, SCHEMA["x-clientRequests"][method].params, params);
        return answer(params);
      } };
    }
  }
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({
    command: PYTHON,
    args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script", ...(extra.daemonArgs ?? [])],
    cwd: dir, env, ...extra,
  });
  const request = c.request.bind(c);
  c.request = async (method, params) => {
    const result = await request(method, params);
    check(`${method} result`, SCHEMA["x-methods"][method]?.result, result);
    return result;
  };
  const conversation = new Conversation();
  const events = [];
  c.onEvent((sessionId, event) => {
    check(`${event.type} event`, { $ref: "#/$defs/AgentEvent" }, event);
    events.push(event);
    conversation.apply(event);
  });
  const settled = (n = 1) => waitFor(() => events.filter((e) => e.type === "agent_settled").length >= n);
  const saw = (type, n = 1) => waitFor(() => events.filter((e) => e.type === type).length >= n);
  return { c, conversation, events, settled, saw };
}

test("streams an answer into the conversation", async () => {
  const dir = workspace([text("Hello from the daemon, streamed in pieces.")], { chunkSize: 3 });
  const { c, conversation, events, settled } = client(dir);
  const init = await c.start();
  assert.equal(init.protocolVersion, 1);
  assert.deepEqual(await c.prompt("hi"), { disposition: "started" });
  await settled();
  assert.equal(conversation.text(), "Hello from the daemon, streamed in pieces.");
  assert.ok(events.filter((e) => e.type === "message_update").length > 5);
  assert.equal(c.gaps, 0);
  assert.equal(conversation.busy, false);
  await c.stop();
});

test("steer during a tool, then a follow-up", async () => {
  const dir = workspace([call("bash", { command: "sleep 0.6; echo slept" }), text("steered"), text("followed up")]);
  const { c, conversation, settled, saw } = client(dir, { daemonArgs: ["--allow", "bash"] }); // no one to ask
  await c.start();
  await c.prompt("run it");
  await saw("tool_execution_start");
  const queued = await c.steer("change course");
  assert.equal(queued.disposition, "queued");
  await c.followUp("and then this");
  await saw("queue_update");
  await settled();
  const users = conversation.messages.filter((m) => m.role === "user").map((m) => m.blocks[0].text);
  assert.deepEqual(users, ["run it", "change course", "and then this"]);
  const roles = conversation.messages.map((m) => m.role);
  assert.deepEqual(roles, ["user", "assistant", "toolResult", "user", "assistant", "user", "assistant"]);
  assert.ok(conversation.tools.get("c_bash").output.includes("slept"));
  await c.stop();
});

test("abort stops the run and keeps the partial answer", async () => {
  const dir = workspace([text("x".repeat(3000))], { chunkSize: 1, delayMs: 2 });
  const { c, conversation, events, saw } = client(dir);
  await c.start();
  await c.prompt("talk");
  await saw("message_update", 10);
  assert.deepEqual(await c.abort(), { aborted: true, steering: [], followUp: [] });
  const settled = events.find((e) => e.type === "agent_settled");
  assert.deepEqual(settled, { type: "agent_settled", aborted: true });
  const last = conversation.messages[conversation.messages.length - 1];
  assert.equal(last.stopReason, "aborted");
  assert.ok(last.blocks[0].text.length > 0 && last.blocks[0].text.length < 3000);
  await c.stop();
});

test("permission round trip", async () => {
  const dir = workspace([call("write", { path: "made.txt", content: "by the agent" }), text("written")]);
  const asked = [];
  const { c, settled } = client(dir, { onPermission: async (request) => (asked.push(request), "allow_once") });
  const init = await c.start();
  assert.equal(init.capabilities.permissions, true);
  await c.prompt("write a file");
  await settled();
  assert.equal(asked.length, 1);
  assert.equal(asked[0].toolName, "write");
  assert.equal(asked[0].title, "Write made.txt");
  assert.equal(readFileSync(join(dir, "made.txt"), "utf8"), "by the agent");
  assert.deepEqual(asked[0].remember, { scope: "path", pattern: "made.txt", label: "write calls on `made.txt`" });
  const shown = permissionPrompt(asked[0]);
  assert.ok(shown.detail.includes("remember: write calls on `made.txt`"), shown.detail);
  assert.deepEqual(shown.choices.map((x) => x.outcome), ["allow_once", "allow_session", "allow_always", "reject_once", "reject_once", "reject_always", "reject_and_stop"]);
  await c.stop();
});

test("allow for this session is sent and remembered for the session", async () => {
  const bash = (id) => ({ content: [{ type: "toolCall", id, name: "bash", arguments: { command: "echo again" } }], stopReason: "toolUse" });
  const dir = workspace([bash("b1"), bash("b2"), text("done")]);
  const asked = [];
  const { c, settled } = client(dir, { onPermission: async (request) => (asked.push(request), "allow_session") });
  await c.start();
  await c.prompt("run twice");
  await settled();
  assert.equal(asked.length, 1);
  assert.equal(asked[0].remember.scope, "prefix");
  assert.ok(permissionPrompt(asked[0]).detail.includes("commands starting with `echo again`"));
  assert.ok(!existsSync(join(dir, "permissions.json")));
  await c.stop();
});

test("resume a session with replay", async () => {
  const dir = workspace([text("first answer"), text("second answer")]);
  const first = client(dir);
  await first.c.start();
  await first.c.prompt("one");
  await first.settled();
  const state = await first.c.request("getState");
  await first.c.stop();
  const second = client(dir);
  await second.c.start();
  const loaded = await second.c.request("session/load", { sessionId: state.sessionId, replay: true });
  assert.equal(loaded.interrupted, false);
  await waitFor(() => second.conversation.messages.length === 2);
  assert.equal(second.conversation.text(), "first answer");
  await second.c.prompt("two");
  await second.settled();
  assert.equal(second.conversation.messages.length, 4);
  await second.c.stop();
});

test("session tree: branches, the current entry, labels; navigate moves and continues there", async () => {
  const dir = workspace([text("first answer"), text("second answer"), text("third answer")]);
  const { c, conversation, settled, events } = client(dir);
  await c.start();
  await c.prompt("one");
  await settled();
  await c.prompt("two");
  await settled(2);
  const firstAnswer = conversation.messages[1].entryId; // message_end names the stored entry
  assert.ok(firstAnswer);
  await c.request("session/label", { entryId: firstAnswer, label: "good point" });
  const moved = await c.navigate(firstAnswer);
  assert.equal(moved.leafId, firstAnswer);
  await c.prompt("three");
  await settled(3);
  const items = await c.tree();
  const at = items.findIndex((i) => i.id === firstAnswer);
  assert.equal(items[at].label, "good point");
  const branches = items.slice(at + 1);
  assert.deepEqual(branches.map((b) => [b.kind, b.title, b.current]),
    [["branch", "branch 1 of 2", false], ["branch", "branch 2 of 2", true]]);
  assert.deepEqual(branches[0].children.map((i) => i.title), ["you: two", "pi: second answer"]);
  assert.deepEqual(branches[1].children.map((i) => [i.title, i.current]),
    [["you: three", false], ["pi: third answer", true]]);
  await c.navigate(branches[0].children[1].id); // back to the first branch's end
  const { messages } = await c.request("getMessages");
  assert.deepEqual(messages.map((m) => m.content[0]?.text ?? m.content), ["one", "first answer", "two", "second answer"]);
  const { sessionId } = await c.request("getState");
  await c.load(sessionId); // replayed: marked, numbered on from the live events, no gap
  await waitFor(() => events.some((e) => e.type === "replay_end"));
  assert.equal(c.gaps, 0);
  assert.deepEqual(outline({ nodes: [], leafId: undefined }), []);
  await c.stop();
});

test("queued messages carry their ids in the conversation", async () => {
  const dir = workspace([call("bash", { command: "sleep 0.6" }), text("done")]);
  const { c, conversation, settled, saw } = client(dir, { daemonArgs: ["--allow", "bash"] });
  await c.start();
  await c.prompt("run it");
  await saw("tool_execution_start");
  const { queueId } = await c.followUp("later");
  await saw("queue_update");
  assert.deepEqual(conversation.queue.items, [{ queueId, kind: "followUp", text: "later" }]);
  await c.request("removeQueued", { queueId });
  await settled();
  assert.deepEqual(conversation.queue.items, []);
  await c.stop();
});

test("the daemon crashes and is restarted; the session is still there", async () => {
  const dir = workspace([text("before the crash"), text("after the restart")]);
  const { c, conversation, settled } = client(dir);
  await c.start();
  await c.prompt("one");
  await settled();
  const { sessionId } = await c.request("getState");
  const restarted = new Promise((resolve) => c.onRestart(resolve));
  const oldPid = c.pid;
  process.kill(oldPid, "SIGKILL");
  assert.equal(await restarted, 1);
  assert.notEqual(c.pid, oldPid);
  await c.request("session/load", { sessionId });
  await c.prompt("two");
  await settled(2);
  const { messages } = await c.request("getMessages");
  assert.deepEqual(messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.equal(messages[1].content[0].text, "before the crash"); // the history survived the crash
  assert.ok(existsSync(join(dir, ".pi", "sessions")));
  assert.equal(conversation.messages.length, 4);
  await c.stop();
});

test("workspace trust: asked once with the reasons, the answer applies and is remembered", async () => {
  const dir = workspace([text("hi")]);
  const home = mkdtempSync(join(tmpdir(), "pi-vscode-home-"));
  mkdirSync(join(dir, ".pi"));
  writeFileSync(join(dir, ".pi", "settings.json"), JSON.stringify({ workspace: { extraRoots: ["/"] } }));
  const asked = [];
  const { c } = client(dir, { env: trustEnv(home), onWorkspaceTrust: async (request) => (asked.push(request), true) });
  const init = await c.start();
  assert.equal(init.capabilities.workspaceTrust, true);
  await waitFor(() => asked.length === 1);
  assert.equal(asked[0].reasons[0].field, "workspace.extraRoots");
  await waitFor(() => existsSync(join(home, "trust.json")));
  const state = await c.request("getState", {});
  assert.deepEqual(state.workspaceTrust, { trusted: true, decided: true, ignored: [] });
  await c.stop();
});

function trustEnv(home) {
  const env = { ...process.env, PI_DAEMON_HOME: home };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  return env;
}

test("workspace: the one initialize names, also when the command hides --workspace", async () => {
  const dir = workspace([text("hi")]);
  const elsewhere = mkdtempSync(join(tmpdir(), "pi-vscode-cwd-"));
  // a wrapper script: the client cannot read --workspace from its arguments
  const script = `exec "${PYTHON}" -m pi_daemon --faux-script "$0/script.json" --model faux/script --workspace "$0"`;
  const c = new PiClient({ command: "sh", args: ["-c", script, dir], cwd: elsewhere, env: trustEnv(dir), restart: false });
  assert.equal(c.workspace, elsewhere); // before initialize: the folder it is started in
  const init = await c.start();
  assert.equal(init.workspace, dir);
  assert.equal(c.workspace, dir);
  await c.stop();
});

test("slash commands: listed, completed after /, updated when the files change, run by the daemon", async () => {
  const dir = workspace([text("reviewed")]);
  mkdirSync(join(dir, ".pi", "prompts"), { recursive: true });
  writeFileSync(join(dir, ".pi", "prompts", "review.md"), "---\ndescription: Review the changes\nargument-hint: \"[focus]\"\n---\nReview $1 now.");
  const { c, events, settled, saw } = client(dir);
  await c.start();
  const commands = new Commands();
  await commands.load(c);
  const names = (input) => commands.complete(input).map((x) => x.name);
  assert.deepEqual(names("/re"), ["review"]);
  assert.deepEqual(commands.complete("/rev")[0], {
    name: "review", description: "Review the changes", source: "template", argumentHint: "[focus]",
    file: join(dir, ".pi", "prompts", "review.md"),
  });
  assert.ok(names("/").includes("compact") && names("/").includes("review"));
  assert.deepEqual(names("/review x"), []); // the first word is done
  assert.deepEqual(names("/usr/bin"), []); // a path, not a command
  assert.deepEqual(names("hello /re"), []);
  c.onEvent((_s, event) => commands.apply(event));
  await c.request("session/new"); // commands_update goes to the open sessions
  writeFileSync(join(dir, ".pi", "prompts", "ship.md"), "Ship it.");
  await saw("commands_update");
  assert.deepEqual(names("/sh"), ["ship"]);
  assert.deepEqual(await c.prompt("/review speed"), { disposition: "started" });
  await settled();
  const user = events.find((e) => e.type === "message_end" && e.message.role === "user").message;
  assert.equal(user.content, "Review speed now.");
  assert.deepEqual(user.command, { name: "review", source: "template", input: "/review speed" });
  const outcome = await c.prompt("/thinking off");
  assert.deepEqual(outcome, {
    disposition: "command", command: { name: "thinking", result: { level: "off" }, summary: "The thinking level is now off." },
  });
  await assert.rejects(c.prompt("/nosuch"), (error) => error.code === -32010);
  await c.stop();
});
