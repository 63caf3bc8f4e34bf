// Issue #39's background processes in the VS Code client, against the real daemon: the agent starts a
// web server in the background; the chat's bash card says it runs there and names the process; the list the
// Processes view draws has it from the events and from process/list (a view opened later); its output is
// followed from where it was last read; Stop on the card ends it, the card and the list say so and the port
// is free; the session loaded again by another daemon says the process no longer runs, also once that daemon
// has a process of the same id.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createConnection, createServer } from "node:net";
import { createRequire } from "node:module";
import { openView, pageDaemon, text, useBrowser, workspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { FollowedOutput, ProcessList, duration, shortCommand, shortStatus, statusLine } = require("../dist/processes.js");
const held = useBrowser();
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const posted = (page, type) => page.evaluate((t) => window.posted.filter((m) => m.type === t), type);

const freePort = () => new Promise((ok) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => ok(port));
  });
});
// Whether something accepts connections on the port.
const listening = (port) => new Promise((ok) => {
  const socket = createConnection({ port, host: "127.0.0.1" });
  socket.once("connect", () => { socket.destroy(); ok(true); });
  socket.once("error", () => ok(false));
});

// The list kept as extension.ts keeps it: from the daemon's events, each change posted to the page.
function processList(c, page) {
  const list = new ProcessList();
  c.onEvent((_sessionId, event) => list.apply(event));
  list.onChange(() => page.evaluate((m) => window.postMessage(m, "*"), { type: "processes", processes: list.all })
    .catch(() => undefined));
  return list;
}

test("a server the agent starts in the background: the card and the list show it, its output follows, Stop on the card frees its port", async (t) => {
  const port = await freePort();
  const command = `python3 -m http.server ${port} --bind 127.0.0.1`;
  const dir = workspace([{ ...call("b1", "bash", { command, background: true }), when: "start the server" },
                         { ...text("The server runs."), when: "start the server" },
                         { ...call("w1", "bash", { command: "sleep 30", background: true }), when: "wait a while" },
                         { ...text("Waiting."), when: "wait a while" }]);
  writeFileSync(join(dir, "settings.json"), JSON.stringify({ sandbox: { network: true } })); // loopback reachable
  const page = await openView(held.browser, 600);
  const c = await pageDaemon(dir, page, ["--yes"]);
  t.after(() => Promise.all([c.stop(), page.close()]));
  const list = processList(c, page);

  await c.prompt("start the server");
  await c.settled();
  const started = await waitFor(() => list.running[0], "the process listed from its event");
  assert.equal(started.command, command);
  assert.equal(started.status, "running");
  assert.match(statusLine(started), /^running · \d+s$/);
  await waitFor(() => listening(port), "the server accepting connections");

  const later = new ProcessList(); // a view opened after the start: process/list has it
  await later.load(c);
  assert.deepEqual(later.all.map((p) => [p.id, p.status, p.command]), [[started.id, "running", command]]);

  const tool = page.locator("details.tool", { hasText: "http.server" });
  await tool.locator("summary", { hasText: "(in the background)" }).waitFor();
  const note = page.locator(".process-note");
  await note.locator(".process-status", { hasText: `Background process ${started.id}: running` }).waitFor();
  assert.deepEqual(await note.locator("button").allInnerTexts(), ["Processes", "Output", "Stop"]);

  // its output, read on from where the last read ended: the request's log line arrives after it
  const output = new FollowedOutput(started.id);
  await output.read(c);
  const before = output.next;
  const answered = await fetch(`http://127.0.0.1:${port}/from-the-test`);
  assert.equal(answered.status, 404, "the server answered");
  await waitFor(async () => (await output.read(c), output.text.includes("GET /from-the-test")), "the request in the output");
  assert.ok(output.next > before);
  assert.equal(output.done, false);

  await note.locator("button", { hasText: "Stop" }).click();
  const [asked] = await waitFor(async () => { const m = await posted(page, "process"); return m.length && m; },
                                "the card asking to stop the process");
  assert.deepEqual(asked, { type: "process", action: "kill", id: started.id });
  await list.kill(c, asked.id); // what extension.ts does with it
  await note.locator(".process-status", { hasText: /: stopped · ran \d+s$/ }).waitFor();
  assert.deepEqual(await note.locator("button").allInnerTexts(), ["Processes", "Output"]);
  assert.equal(list.running.length, 0);
  await waitFor(async () => !(await listening(port)), "the port free", 5000);
  await waitFor(async () => (await output.read(c), output.done), "the output saying it ended");
  assert.match(output.shown(), /GET \/from-the-test[\s\S]*\[stopped\]$/);

  // the conversation loaded again by a daemon of its own: the process is no longer the daemon's
  const { sessionId } = await c.request("getState");
  await c.stop();
  const again = await openView(held.browser, 600);
  const c2 = await pageDaemon(dir, again, ["--yes"]);
  t.after(() => Promise.all([c2.stop(), again.close()]));
  const list2 = processList(c2, again);
  await list2.load(c2);
  await c2.load(sessionId);
  await again.locator("details.tool summary", { hasText: "(in the background)" }).waitFor();
  await again.locator(".process-note", { hasText: `Background process ${started.id}: no longer running` }).waitFor();
  assert.equal(await again.locator(".process-note button").count(), 0);

  // this daemon numbers its processes from p1 again: the old card is not taken for the new process
  await c2.request("session/new");
  await c2.prompt("wait a while");
  await c2.settled(undefined, 1);
  const waiting = await waitFor(() => list2.running[0], "the new process listed");
  assert.equal(waiting.id, started.id, "the same id, another process");
  const notes = again.locator(".process-note");
  await notes.nth(1).locator(".process-status", { hasText: `Background process ${waiting.id}: running` }).waitFor();
  assert.match(await notes.nth(0).innerText(), /no longer running/);
  await list2.kill(c2, waiting.id);
});

test("an end already listed stays when a process/list answer served before it says running", async () => {
  // the answer's state is when the daemon served the request; the exit event, written meanwhile, came first
  const info = { id: "p1", pid: 4242, command: "make watch", cwd: "/w", status: "running", startedAt: 1 };
  const list = new ProcessList();
  list.apply({ type: "process_started", process: info });
  list.apply({ type: "process_exited", process: { ...info, status: "exited", exitCode: 0, endedAt: 2 } });
  await list.load({ request: async () => ({ processes: [info] }) });
  assert.equal(list.get("p1").status, "exited");
});

test("how long a process ran reads at a glance", () => {
  assert.deepEqual([0, 8_400, 125_000, 3_780_000].map(duration), ["0s", "8s", "2m 05s", "1h 03m"]);
  const p = { id: "p1", command: "x", status: "exited", exitCode: 3, startedAt: 1000, endedAt: 6000 };
  assert.equal(statusLine(p), "exited 3 · ran 5s");
  assert.equal(shortStatus(p), "exit 3 · 5s"); // the view's row, beside the command
  assert.equal(shortStatus({ ...p, status: "running", endedAt: undefined }, 126_000), "2m 05s");
  assert.equal(shortCommand("python3 -m http.server 44975 --bind 127.0.0.1", 30), "python3 -m http.server 44975…");
});
