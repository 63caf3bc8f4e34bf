// pi-daemon --acp driven by the official ACP TypeScript SDK (@agentclientprotocol/sdk, its
// client app: the successor of ClientSideConnection), over the real daemon's pipes.
import { afterEach, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import * as acp from "@agentclientprotocol/sdk";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const PYTHON = process.env.PI_DAEMON_PYTHON || path.join(ROOT, ".venv/bin/python");
const KEYS = ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY"];

function tool(name, args, id) {
  return { content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" };
}
const text = (t) => ({ content: [{ type: "text", text: t }] });

// Lines `line` (1-based) to `line + limit - 1` of a text, each with its line end, as an editor
// answers a windowed fs/read_text_file.
function lineWindow(text, line, limit) {
  if (line == null && limit == null) return text;
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  const start = (line ?? 1) - 1;
  return lines.slice(start, limit == null ? undefined : start + limit).join("");
}

// Daemons a failed test left running are killed, so that a failure ends the run instead of hanging it.
const daemons = new Set();
afterEach(() => {
  for (const child of daemons) child.kill("SIGKILL");
  daemons.clear();
});

// A started daemon with a connected client app that records what it hears.
function start(workspace, replies, { fs = false, options = {} } = {}) {
  const args = ["-m", "pi_daemon", "--acp"];
  if (replies) {
    const script = path.join(path.dirname(workspace), `script-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(script, JSON.stringify({ modelId: "acp", replies, ...options }));
    args.push("--faux-script", script, "--model", "faux/acp");
  } else {
    args.push("--model", "faux/echo");
  }
  const env = { ...process.env, PI_DAEMON_HOME: mkdtempSync(path.join(tmpdir(), "pi-home-")), PYTHONPATH: ROOT };
  for (const key of KEYS) delete env[key];
  const child = spawn(PYTHON, args, { cwd: workspace, env, stdio: ["pipe", "pipe", "pipe"] });
  daemons.add(child);
  child.on("exit", () => daemons.delete(child));
  let stderr = "";
  child.stderr.on("data", (d) => (stderr += d));
  const seen = { updates: [], permissions: [], reads: [], windows: [], writes: [], buffers: new Map(), answer: "allow_once" };
  const app = acp
    .client()
    .onNotification("session/update", ({ params }) => {
      seen.updates.push(params.update);
    })
    .onRequest("session/request_permission", async ({ params }) => {
      seen.permissions.push(params);
      if (seen.answer === null) await new Promise(() => {}); // never answered
      return { outcome: { outcome: "selected", optionId: seen.answer } };
    })
    .onRequest("fs/read_text_file", ({ params }) => {
      seen.reads.push(params.path);
      seen.windows.push([params.line ?? null, params.limit ?? null]);
      const content = seen.buffers.get(params.path) ?? readFileSync(params.path, "utf8");
      return { content: lineWindow(content, params.line, params.limit) };
    })
    .onRequest("fs/write_text_file", ({ params }) => {
      seen.writes.push([params.path, params.content]);
      seen.buffers.set(params.path, params.content);
      return {};
    });
  const connection = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  const agent = connection.agent;
  const stop = async () => {
    child.stdin.end();
    const code = await new Promise((resolve) => child.on("exit", resolve));
    assert.equal(code, 0, stderr);
    assert.ok(!stderr.includes("Traceback"), stderr);
  };
  const init = agent.request("initialize", {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: fs, writeTextFile: fs }, terminal: false },
  });
  return { agent, seen, init, stop };
}

const of = (seen, kind) => seen.updates.filter((u) => u.sessionUpdate === kind);
const said = (seen, kind = "agent_message_chunk") => of(seen, kind).map((u) => u.content.text).join("");

function workspace() {
  const ws = path.join(mkdtempSync(path.join(tmpdir(), "pi-acp-node-")), "ws");
  mkdirSync(ws);
  return ws;
}

test("initialize, new session and a streamed prompt", async () => {
  const ws = workspace();
  const d = start(ws, [{ content: [{ type: "thinking", thinking: "hmm" }, { type: "text", text: "Streaming over ACP." }] }],
    { options: { chunkSize: 4 } });
  const init = await d.init;
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.equal(init.agentCapabilities.promptCapabilities.image, true);
  assert.equal(init.agentCapabilities.promptCapabilities.embeddedContext, true);
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const reply = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
  assert.equal(reply.stopReason, "end_turn");
  assert.equal(said(d.seen), "Streaming over ACP.");
  assert.ok(of(d.seen, "agent_message_chunk").length > 2);
  assert.equal(said(d.seen, "agent_thought_chunk"), "hmm");
  await d.stop();
});

test("a write asks permission and goes through the editor's fs", async () => {
  const ws = workspace();
  writeFileSync(path.join(ws, "a.txt"), "disk\n");
  const d = start(ws, [
    tool("read", { path: "a.txt" }, "r1"),
    tool("write", { path: "a.txt", content: "from the agent\n" }, "w1"),
    text("done"),
  ], { fs: true });
  await d.init;
  d.seen.buffers.set(path.join(ws, "a.txt"), "unsaved editor text\n");
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const reply = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
  assert.equal(reply.stopReason, "end_turn");
  assert.equal(d.seen.permissions.length, 1);
  assert.equal(d.seen.permissions[0].toolCall.kind, "edit");
  assert.deepEqual(d.seen.permissions[0].options.map((o) => [o.optionId, o.kind]), [
    ["allow_once", "allow_once"], ["allow_always", "allow_always"], ["reject_once", "reject_once"],
    ["reject_always", "reject_always"], ["reject_and_stop", "reject_once"],
  ]);
  assert.deepEqual(d.seen.writes, [[path.join(ws, "a.txt"), "from the agent\n"]]);
  assert.equal(readFileSync(path.join(ws, "a.txt"), "utf8"), "disk\n");
  const finals = of(d.seen, "tool_call_update").filter((u) => u.status === "completed");
  assert.match(finals.find((u) => u.toolCallId === "r1").content[0].content.text, /unsaved editor text/);
  assert.deepEqual(finals.find((u) => u.toolCallId === "w1").content[0],
    { type: "diff", path: path.join(ws, "a.txt"), oldText: null, newText: "from the agent\n" });
  await d.stop();
});

test("a read of a window asks the editor for those lines; a buffer unlike the saved file is read whole; an edit reads the whole buffer", async () => {
  const ws = workspace();
  const file = path.join(ws, "long.py");
  const numbered = (word) => Array.from({ length: 100 }, (_, n) => `${word} ${n + 1}\n`).join("");
  writeFileSync(file, numbered("disk"));
  const d = start(ws, [
    tool("read", { path: "long.py", offset: 40, limit: 3 }, "r1"),
    tool("edit", { path: "long.py", edits: [{ oldText: "buffer 90\n", newText: "ninety\n" }] }, "e1"),
    text("done"),
  ], { fs: true });
  await d.init;
  d.seen.buffers.set(file, numbered("buffer"));
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const reply = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
  assert.equal(reply.stopReason, "end_turn");
  assert.deepEqual(d.seen.windows[0], [40, 4]); // one line more than shown: does the file go on?
  // The window's lines are not the saved file's there (unsaved edits may have moved them), so the
  // whole buffer is read and cut by the tool, which then knows the line count too.
  assert.ok(d.seen.windows.slice(1).length > 0 && d.seen.windows.slice(1).every((w) => w[0] === null && w[1] === null));
  const read = of(d.seen, "tool_call_update").find((u) => u.toolCallId === "r1" && u.status === "completed");
  assert.deepEqual(read.content[0].content.text.split("\n"), ["    40\tbuffer 40", "    41\tbuffer 41",
    "    42\tbuffer 42", "[Showing lines 40-42 of 100. Use offset=43 to read on.]"]);
  assert.match(d.seen.buffers.get(file), /buffer 89\nninety\nbuffer 91\n/);
  await d.stop();
});

test("a read of a window whose lines are the saved file's asks the editor for those lines only", async () => {
  const ws = workspace();
  const file = path.join(ws, "long.py");
  writeFileSync(file, Array.from({ length: 100 }, (_, n) => `disk ${n + 1}\n`).join(""));
  const d = start(ws, [tool("read", { path: "long.py", offset: 40, limit: 3 }, "r1"), text("done")], { fs: true });
  await d.init;
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const reply = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "go" }] });
  assert.equal(reply.stopReason, "end_turn");
  assert.deepEqual(d.seen.windows, [[40, 4]]);
  const read = of(d.seen, "tool_call_update").find((u) => u.toolCallId === "r1" && u.status === "completed");
  assert.deepEqual(read.content[0].content.text.split("\n"), ["    40\tdisk 40", "    41\tdisk 41",
    "    42\tdisk 42", "[Showing lines 40-42. Use offset=43 to read on.]"]);
  await d.stop();
});

test("cancel mid-stream answers cancelled; a pending permission is dropped", async () => {
  const ws = workspace();
  const d = start(ws, [text("word ".repeat(400)), tool("bash", { command: "echo x > out.txt" }, "b1"), text("never")],
    { options: { chunkSize: 3, delayMs: 5 } });
  await d.init;
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const running = d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "talk" }] });
  while (of(d.seen, "agent_message_chunk").length === 0) await new Promise((r) => setTimeout(r, 10));
  await d.agent.notify("session/cancel", { sessionId });
  assert.equal((await running).stopReason, "cancelled");
  d.seen.answer = null;
  const second = d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "run it" }] });
  while (d.seen.permissions.length === 0) await new Promise((r) => setTimeout(r, 10));
  await d.agent.notify("session/cancel", { sessionId });
  assert.equal((await second).stopReason, "cancelled");
  assert.ok(!existsSync(path.join(ws, "out.txt")));
  await d.stop();
});

test("session/load replays the conversation before it answers", async () => {
  const ws = workspace();
  writeFileSync(path.join(ws, "n.txt"), "notes\n");
  const first = start(ws, [tool("read", { path: "n.txt" }, "r1"), text("It says notes.")]);
  await first.init;
  const { sessionId } = await first.agent.request("session/new", { cwd: ws, mcpServers: [] });
  await first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "read the notes" }] });
  await first.stop();
  const again = start(ws, null);
  await again.init;
  await again.agent.request("session/load", { sessionId, cwd: ws, mcpServers: [] });
  const kinds = again.seen.updates.map((u) => u.sessionUpdate);
  assert.deepEqual(kinds, ["user_message_chunk", "tool_call", "tool_call_update", "agent_message_chunk",
    "available_commands_update", "usage_update"]);
  assert.equal(said(again.seen, "user_message_chunk"), "read the notes");
  assert.equal(of(again.seen, "tool_call_update")[0].status, "completed");
  await again.stop();
});

test("resume, close, delete and logout through the SDK's own methods", async () => {
  const ws = workspace();
  const first = start(ws, [text("first")]);
  const init = await first.init;
  assert.deepEqual(init.agentCapabilities.sessionCapabilities,
    { list: {}, resume: {}, close: {}, delete: {}, additionalDirectories: {} });
  assert.deepEqual(init.agentCapabilities.auth, { logout: {} });
  const { sessionId } = await first.agent.request("session/new", { cwd: ws, mcpServers: [] });
  await first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] });
  await first.stop();
  const again = start(ws, null);
  await again.init;
  const resumed = await again.agent.request("session/resume", { sessionId, cwd: ws });
  assert.equal(resumed.modes.currentModeId, "ask");
  assert.ok(!again.seen.updates.some((u) => u.sessionUpdate === "user_message_chunk")); // no replay
  assert.deepEqual(await again.agent.request("session/close", { sessionId }), {});
  await assert.rejects(again.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hi" }] }),
    (err) => err.code === -32002);
  assert.deepEqual(await again.agent.request("session/delete", { sessionId }), {});
  assert.deepEqual((await again.agent.request("session/list", {})).sessions, []);
  assert.deepEqual(await again.agent.request("logout", {}), {});
  await again.stop();
});

test("an aborted request sends $/cancel_request: a prompt stops, answered as cancelled", async () => {
  const ws = workspace();
  const d = start(ws, [text("word ".repeat(400)), text("after")], { options: { chunkSize: 3, delayMs: 5 } });
  await d.init;
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  const abort = new AbortController();
  const running = d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "talk" }] },
    { cancellationSignal: abort.signal });
  while (of(d.seen, "agent_message_chunk").length === 0) await new Promise((r) => setTimeout(r, 10));
  abort.abort();
  await assert.rejects(running, (err) => err.code === -32800);
  const next = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "next" }] });
  assert.equal(next.stopReason, "end_turn");
  await d.stop();
});

test("bad input is answered with JSON-RPC errors and the connection stays up", async () => {
  const ws = workspace();
  const d = start(ws, null);
  await d.init;
  await assert.rejects(
    d.agent.request("session/prompt", { sessionId: "nope", prompt: [{ type: "text", text: "hi" }] }),
    (err) => err.code === -32002,
  );
  const { sessionId } = await d.agent.request("session/new", { cwd: ws, mcpServers: [] });
  await assert.rejects(
    d.agent.request("session/prompt", { sessionId, prompt: [{ type: "image", data: 7 }] }),
    (err) => err.code === -32602 && /prompt\[0\]/.test(err.message),
  );
  await assert.rejects(d.agent.request("_pi/nothing", {}), (err) => err.code === -32601);
  const reply = await d.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "still here?" }] });
  assert.equal(reply.stopReason, "end_turn");
  assert.match(said(d.seen), /You said: still here\?/);
  await d.stop();
});
