// The editor file system and the review logic against the real daemon (scripted model).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient } = require("../dist/rpcClient.js");
const { fsHandlers, DirtyReporter, Review, choose, applyTextEdits, uriPath } = require("../dist/editorFs.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });

// Open documents in memory, edited the way VS Code's workspace.applyEdit edits them.
class Documents {
  constructor() { this.docs = new Map(); this.edits = []; }
  open(path, content) { this.docs.set(path, { content, version: 1 }); }
  document(path) { return this.docs.get(path); }
  dirty() { return [...this.docs.keys()]; } // every open document here holds unsaved text
  async applyEdit(label, edit) {
    this.edits.push({ label, edit });
    for (const change of edit.documentChanges) {
      if (change.kind === "create") this.docs.set(uriPath(change.uri), { content: "", version: 1 });
      else if (change.kind === "delete") { this.docs.delete(uriPath(change.uri)); unlinkSync(uriPath(change.uri)); }
      else {
        const path = uriPath(change.textDocument.uri);
        const doc = this.docs.get(path) ?? { content: readFileSync(path, "utf8"), version: 1 };
        this.docs.set(path, { content: applyTextEdits(doc.content, change.edits), version: doc.version + 1 });
      }
    }
    return { applied: true };
  }
}

// `folder` (default: a new temporary folder): where the daemon is started, i.e. its workspace.
function start(replies, answers = [], folder = undefined) {
  const dir = folder ?? mkdtempSync(join(tmpdir(), "pi-vscode-fs-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies }));
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const docs = new Documents();
  const c = new PiClient({
    command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script", "--yes"],
    cwd: dir, env, restart: false, fs: recorded(fsHandlers(docs), answers),
  });
  const events = [];
  c.onEvent((_s, event) => events.push(event));
  const settled = (n = 1) => waitFor(() => events.filter((e) => e.type === "agent_settled").length >= n);
  return { dir, docs, c, events, settled };
}

// The handlers, keeping each fs/readTextFile request with its answer.
function recorded(handlers, answers) {
  const read = handlers.readTextFile;
  return { ...handlers, readTextFile: (params) => { const a = read(params); answers.push([params, a]); return a; } };
}

const results = (events) => events.filter((e) => e.type === "tool_execution_end");
const resultText = (end) => end.result.content.map((b) => b.text).join("");

test("the agent reads the dirty document and edits through applyEdit", async () => {
  const { dir, docs, c, events, settled } = start([
    call("r", "read", { path: "a.py" }),
    call("e", "edit", { path: "a.py", edits: [{ oldText: "x = 2", newText: "x = 3" }] }),
    text("done"),
  ]);
  writeFileSync(join(dir, "a.py"), "x = 1\n");
  docs.open(join(dir, "a.py"), "x = 2\n"); // unsaved
  const init = await c.start();
  assert.deepEqual(init.capabilities.fs, { readTextFile: true, applyEdit: true, save: false }); // no save handler: never asked to save
  await c.prompt("bump x");
  await settled();
  const [read, edit] = results(events);
  assert.ok(resultText(read).includes("x = 2"), resultText(read));
  assert.equal(edit.isError, false, resultText(edit));
  assert.equal(docs.edits.length, 1);
  assert.equal(docs.document(join(dir, "a.py")).content, "x = 3\n");
  assert.equal(readFileSync(join(dir, "a.py"), "utf8"), "x = 1\n"); // saving is the user's choice
  const diff = events.filter((e) => e.type === "turn_diff").pop();
  assert.ok(diff.files[0].diff.includes("-x = 2\n+x = 3\n"), diff.files[0].diff);
  await c.stop();
});

test("a read of a window gets only those lines of the dirty document", async () => {
  const answers = [];
  const { dir, docs, c, events, settled } = start([
    call("r", "read", { path: "long.py", offset: 3, limit: 2 }),
    text("done"),
  ], answers);
  const lines = (word) => Array.from({ length: 10 }, (_, n) => `${word} ${n + 1}\r\n`).join("");
  writeFileSync(join(dir, "long.py"), lines("disk"));
  docs.open(join(dir, "long.py"), lines("buffer"));
  await c.start();
  await c.prompt("read lines 3 and 4");
  await settled();
  const [params, answer] = answers[0];
  assert.equal(params.line, 3);
  assert.equal(params.limit, 3); // one more than shown: does the file go on?
  assert.equal(answer.content, "buffer 3\r\nbuffer 4\r\nbuffer 5\r\n");
  const shown = resultText(results(events)[0]);
  assert.match(shown, /3\tbuffer 3\n\s+4\tbuffer 4\n\[Showing lines 3-4\. Use offset=5 to read on\.\]/);
  await c.stop();
  const handlers = fsHandlers(docs);
  assert.equal(handlers.readTextFile({ path: join(dir, "long.py"), line: 10, limit: 5 }).content, "buffer 10\r\n");
  assert.equal(handlers.readTextFile({ path: join(dir, "long.py"), line: 11 }).content, "");
});

test("an edit made from an older document version is refused", async () => {
  const docs = new Documents();
  docs.open("/tmp/none.py", "a\n");
  docs.docs.get("/tmp/none.py").version = 5;
  const handlers = fsHandlers(docs);
  const edit = { documentChanges: [{ textDocument: { uri: "file:///tmp/none.py", version: 4 }, edits: [] }] };
  const result = await handlers.applyEdit({ label: "x", edit });
  assert.equal(result.applied, false);
  assert.match(result.failureReason, /version 4, now 5/);
  assert.equal(docs.edits.length, 0);
  assert.deepEqual(handlers.readTextFile({ path: "/tmp/other" }), { content: null });
});

test("review: a turn's hunks, revert one through the editor, accept another, the texts for vscode.diff", async () => {
  const lines = Array.from({ length: 30 }, (_, n) => `line ${n + 1}\n`);
  const changed = [...lines];
  changed[1] = "line two\n"; changed[14] = "line fifteen\n"; changed[27] = "line twenty-eight\n";
  const { dir, docs, c, settled } = start([call("w", "write", { path: "f.txt", content: changed.join("") }), text("ok")]);
  writeFileSync(join(dir, "f.txt"), lines.join(""));
  const review = new Review(c);
  await c.start();
  await c.prompt("rename three lines");
  await settled();
  assert.equal(review.current.files[0].hunks.length, 3); // from the turn_diff event
  const hunks = (await review.load()).files[0].hunks;
  assert.equal(review.hunkAt("f.txt", 15).id, hunks[1].id);
  assert.equal(review.at(join(dir, "f.txt"), 15).hunk.id, hunks[1].id);
  assert.deepEqual(review.at(join(dir, "f.txt"), 9), { path: "f.txt", hunk: undefined }); // between hunks
  const reverted = await review.revert(choose("f.txt", [hunks[1].id]));
  assert.deepEqual(reverted.reverted, [{ path: "f.txt", hunkIds: [hunks[1].id] }]);
  const now = docs.document(join(dir, "f.txt")).content;
  assert.ok(now.includes("line 15\n") && now.includes("line two\n") && now.includes("line twenty-eight\n"), now);
  assert.deepEqual(review.current.files[0].hunks.map((h) => h.id), [hunks[0].id, hunks[2].id]);
  assert.equal(await review.accept("f.txt", [hunks[0].id]), 1);
  assert.deepEqual(review.current.files[0].hunks.map((h) => h.accepted), [true, false]);
  const { before, after } = await review.contents("f.txt");
  assert.equal(before, lines.join(""));
  assert.ok(after.includes("line twenty-eight\n") && !after.includes("line fifteen"));
  await c.stop();
});

test("review in a multi-root window: a changed path is the file in the daemon's folder, not the first root's", async () => {
  // Two workspace folders with the same relative file; the daemon was started in the second.
  const window = mkdtempSync(join(tmpdir(), "pi-vscode-roots-"));
  const [first, second] = [join(window, "first"), join(window, "second")];
  for (const root of [first, second]) {
    mkdirSync(join(root, "src", "deep"), { recursive: true });
    writeFileSync(join(root, "src", "app.py"), "x = 1\n");
  }
  const { docs, c, settled } = start([
    call("e", "edit", { path: "src/app.py", edits: [{ oldText: "x = 1", newText: "x = 2" }] }), text("ok"),
    call("w", "write", { path: "notes.txt", content: "n\n" }), text("ok"),
  ], [], second);
  const review = new Review(c);
  await c.start();
  await c.prompt("bump x");
  await settled();
  assert.equal(review.current.files[0].path, "src/app.py"); // relative, as the daemon shows it
  const file = review.absolutePath("src/app.py");
  assert.equal(file, join(second, "src", "app.py"));
  assert.equal(docs.document(file).content, "x = 2\n"); // the file the agent changed
  assert.equal(readFileSync(join(first, "src", "app.py"), "utf8"), "x = 1\n");
  // the editor title's Accept / Revert: the file open in an editor, the hunk at the cursor's line
  const hunk = review.current.files[0].hunks[0];
  assert.deepEqual(review.at(file, 1), { path: "src/app.py", hunk });
  assert.equal(review.at(join(first, "src", "app.py"), 1), undefined); // the other root's file: not the run's
  assert.equal((await review.load()).files[0].path, "src/app.py");
  assert.equal(review.absolutePath("src/app.py"), file); // loaded with changes/get: the same file
  // A session working in a subfolder reports paths relative to the daemon's workspace too.
  await c.request("session/new", { cwd: join(second, "src", "deep") });
  await c.prompt("write notes");
  await settled(2);
  assert.equal(review.current.files[0].path, join("src", "deep", "notes.txt"));
  assert.equal(docs.document(review.absolutePath(review.current.files[0].path)).content, "n\n");
  assert.equal(review.absolutePath("/elsewhere/x.txt"), "/elsewhere/x.txt");
  await c.stop();
  // --workspace puts the daemon's workspace elsewhere than the folder it starts in
  writeFileSync(join(window, "script.json"), JSON.stringify({ modelId: "script", replies: [
    call("w", "write", { path: "src/app.py", content: "x = 3\n" }), text("ok")] }));
  const env = { ...process.env, PI_DAEMON_HOME: window };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const moved = new PiClient({ command: PYTHON, cwd: window, restart: false, env,
    args: ["-m", "pi_daemon", "--workspace", "second", "--faux-script", join(window, "script.json"), "--model", "faux/script", "--yes"] });
  const elsewhere = new Review(moved);
  let done = false;
  moved.onEvent((_s, event) => { if (event.type === "agent_settled") done = true; });
  await moved.start();
  await moved.prompt("write x = 3");
  await waitFor(() => done);
  assert.equal(elsewhere.current.files[0].path, join("src", "app.py"));
  assert.equal(readFileSync(elsewhere.absolutePath(elsewhere.current.files[0].path), "utf8"), "x = 3\n");
  await moved.stop();
});

test("dirty documents are reported and grep searches them", async () => {
  const { dir, docs, c, events, settled } = start([call("g", "grep", { pattern: "needle", glob: "*.txt" }), text("ok")]);
  writeFileSync(join(dir, "n.txt"), "nothing\n");
  docs.open(join(dir, "n.txt"), "a needle, unsaved\n");
  await c.start();
  const sent = [];
  const reporter = new DirtyReporter((paths) => (sent.push(paths), c.notify("fs/didChangeDirty", { paths })));
  reporter.update([join(dir, "n.txt")]);
  reporter.update([join(dir, "n.txt")]); // unchanged: not sent again
  assert.equal(sent.length, 1);
  await c.prompt("find the needle");
  await settled();
  assert.equal(resultText(results(events)[0]), "n.txt:1:a needle, unsaved");
  await c.stop();
});

test("documents left unsaved before the daemon started are searched by grep, and after it restarts", async () => {
  const { dir, docs, c, events, settled } = start([
    call("g", "grep", { pattern: "needle", glob: "*.txt" }), text("ok"),
    call("g2", "grep", { pattern: "needle", glob: "*.txt" }), text("ok"),
  ]);
  writeFileSync(join(dir, "n.txt"), "nothing\n");
  docs.open(join(dir, "n.txt"), "a needle, typed before pi started\n"); // no change event after the start
  await c.start();
  await c.prompt("find the needle");
  await settled();
  assert.equal(resultText(results(events)[0]), "n.txt:1:a needle, typed before pi started");
  // a new daemon (a crash and restart, another folder) is told again
  await c.stop();
  await c.start();
  await c.prompt("find it again");
  await settled(2);
  assert.equal(resultText(results(events)[1]), "n.txt:1:a needle, typed before pi started");
  await c.stop();
});

test("review: the session's runs, newest first; an earlier run's changes load into the view", async () => {
  const { c, settled } = start([
    call("w1", "write", { path: "first.txt", content: "one\n" }), text("ok"),
    call("w2", "write", { path: "second.txt", content: "two\n" }), text("ok"),
  ]);
  const review = new Review(c);
  await c.start();
  await c.prompt("make the first file");
  await settled();
  await c.prompt("make the second file");
  await settled(2);
  const runs = await review.runs();
  assert.equal(runs.length, 2);
  assert.deepEqual(runs.map((r) => r.files), [1, 1]);
  assert.deepEqual((await review.load()).files.map((f) => f.path), ["second.txt"]); // the latest
  const earlier = await review.load(runs[1].runId);
  assert.deepEqual(earlier.files.map((f) => f.path), ["first.txt"]);
  assert.equal(review.current.runId, runs[1].runId);
  await c.stop();
});
