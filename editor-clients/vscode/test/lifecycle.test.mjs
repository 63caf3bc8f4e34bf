// The daemon's life as the extension sees it, against the real daemon: a program that is not there or
// ends at once gives a clear error (never a write to a dead stream); a daemon killed idle or mid-answer
// is noticed (exit code or signal), started again, and its session loads back (interrupted when cut
// off) and takes the next prompt; quick deaths in a row stop the restarts until revive(). Also: where
// the daemon is looked for, and the Python the install needs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { daemonPids } from "../test-support/daemons.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient, DaemonStartError } = require("../dist/rpcClient.js");
const { locateDaemon, managedVenv } = require("../dist/daemonLocator.js");
const { findPython, installDaemon } = require("../dist/daemonInstall.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

const text = (t) => ({ content: [{ type: "text", text: t }] });

function daemon(replies, options = {}, script = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-life-"));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies, ...script }));
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const log = [];
  const c = new PiClient({ command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script"],
                           cwd: dir, env, onLog: (t) => log.push(t), ...options });
  const events = [];
  const exits = [];
  let restarts = 0;
  c.onEvent((sessionId, event) => events.push({ sessionId, ...event }));
  c.onExit((exit) => exits.push(exit));
  c.onRestart(() => restarts++);
  return { c, dir, log, events, exits, restarts: () => restarts };
}

test("a daemon program that is not there: a clear error, said in the log, and no restart", async () => {
  const log = [];
  const c = new PiClient({ command: "pi-daemon-not-installed", cwd: tmpdir(), onLog: (t) => log.push(t) });
  const error = await c.start().then(() => undefined, (e) => e);
  assert.ok(error instanceof DaemonStartError, String(error));
  assert.equal(error.code, "ENOENT");
  assert.match(error.message, /"pi-daemon-not-installed" was not found/);
  assert.match(log.join(""), /pi-daemon did not start: "pi-daemon-not-installed" was not found/);
  await assert.rejects(c.request("getState"), /not running/);
});

test("a daemon that ends before answering: its exit code and last words in the error", async () => {
  const c = new PiClient({ command: PYTHON, args: ["-c", "import sys; print('No module named pi_daemon', file=sys.stderr); sys.exit(3)"],
                           cwd: tmpdir() });
  const error = await c.start().then(() => undefined, (e) => e);
  assert.equal(error?.code, "EXITED");
  assert.match(error.message, /exit code 3.*No module named pi_daemon/);
});

test("killed while idle: noticed with its signal, started again, the same session loads and takes the next prompt", async () => {
  const d = daemon([text("first answer"), text("second answer")]);
  await d.c.start();
  try {
    await d.c.prompt("hello");
    await waitFor(() => d.events.some((e) => e.type === "agent_settled"), "the first answer");
    const sessionId = d.events[0].sessionId;
    process.kill(d.c.pid, "SIGKILL");
    await waitFor(() => d.restarts() === 1, "the restart");
    assert.deepEqual(d.exits, [{ code: null, signal: "SIGKILL", restarting: true }]);
    const replayed = [];
    d.c.onEvent((_s, e) => replayed.push(e));
    const loaded = await d.c.load(sessionId);
    assert.equal(loaded.sessionId, sessionId);
    assert.equal(loaded.interrupted, false);
    await waitFor(() => replayed.some((e) => e.type === "message_end" && e.message.role === "assistant"), "the replay");
    await d.c.prompt("again");
    await waitFor(() => d.events.filter((e) => e.type === "agent_settled").length === 2, "the second answer");
    assert.equal((await d.c.request("getState")).sessionId, sessionId);
    assert.equal((await d.c.request("getState")).messageCount, 4);
  } finally {
    await d.c.stop();
  }
});

test("killed while idle, its session taken by another process meanwhile: the chat's line says it was not loaded again, and why", async () => {
  const { CrashRecovery } = require("../dist/crashRecovery.js");
  const d = daemon([text("first answer")]);
  const posted = [];
  let sessionId;
  let held;
  const taken = new Promise((resolve) => (held = resolve));
  const recovery = new CrashRecovery({
    post: (message) => posted.push(message), show: () => {}, sessionId: () => sessionId, partialAnswer: () => undefined,
    settle: () => {}, log: () => {},
    // the extension's redraw: the session replayed into the chat, here once the other process holds its file
    redraw: async (id) => { await taken; return d.c.load(id, { replay: true }); },
  });
  recovery.attach(d.c);
  await d.c.start();
  let other;
  try {
    await d.c.prompt("hello");
    await waitFor(() => d.events.some((e) => e.type === "agent_settled"), "the first answer");
    sessionId = d.events[0].sessionId;
    const folder = join(d.dir, ".pi", "sessions");
    const file = join(folder, readdirSync(folder).find((f) => f.endsWith(`${sessionId}.jsonl`)));
    // a second agent opening the same session: it waits for the file's lock, which the killed daemon lets go
    other = spawn(PYTHON, ["-c", "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
                                 + "print('held', flush=True); time.sleep(600)", file], { stdio: ["ignore", "pipe", "inherit"] });
    other.stdout.on("data", (data) => { if (String(data).includes("held")) held(); });
    process.kill(d.c.pid, "SIGKILL");
    await waitFor(() => posted.some((m) => m.type === "notice" && /restarted/.test(m.text)), "the restart's line");
    const said = posted.filter((m) => m.type === "notice").at(-1).text;
    assert.match(said, /^pi-daemon stopped \(killed by SIGKILL\) and was restarted; this conversation could not be loaded again \(.*another process.*\); it is kept, and History opens it\.$/);
    assert.doesNotMatch(said, /is loaded again/);
    await recovery.ready(); // prompts go on: the daemon is back
    assert.ok((await d.c.request("getState")).sessionId);
  } finally {
    other?.kill("SIGKILL");
    await d.c.stop();
  }
});

test("killed mid-answer: the session loads back interrupted, and continue answers it", async () => {
  const long = Array.from({ length: 150 }, (_, i) => `word${i}`).join(" ");
  const d = daemon([text(long)], {}, { chunkSize: 3, delayMs: 10 });
  await d.c.start();
  try {
    await d.c.prompt("tell me a long story");
    await waitFor(() => d.events.some((e) => e.type === "message_update"), "the answer streaming");
    const sessionId = d.events[0].sessionId;
    process.kill(d.c.pid, "SIGKILL");
    await waitFor(() => d.restarts() === 1, "the restart");
    const loaded = await d.c.load(sessionId);
    assert.equal(loaded.interrupted, true);
    assert.equal(loaded.state.messageCount, 1); // the prompt, without an answer
    await d.c.request("continue", { sessionId });
    await waitFor(() => d.events.filter((e) => e.type === "agent_settled").length === 1, "the continued answer");
    const answer = d.events.filter((e) => e.type === "message_end" && e.message.role === "assistant").at(-1);
    assert.equal(answer.message.content[0].text, long); // the restarted faux script answers from its start
    assert.equal((await d.c.request("getState")).messageCount, 2);
  } finally {
    await d.c.stop();
  }
});

test("quick deaths in a row stop the restarts; revive starts it again", async () => {
  const d = daemon([text("hi")], { quickDeaths: 2 });
  await d.c.start();
  process.kill(d.c.pid, "SIGKILL");
  await waitFor(() => d.restarts() === 1, "the first restart");
  process.kill(d.c.pid, "SIGKILL");
  await waitFor(() => d.exits.length === 2, "the second death");
  assert.equal(d.exits[1].restarting, false);
  try {
    await assert.rejects(d.c.request("getState"), /pi-daemon is not running/);
    await d.c.revive();
    assert.equal(d.restarts(), 2);
    assert.ok((await d.c.request("getState")).model);
  } finally {
    await d.c.stop();
  }
});

test("Restart clicked twice at once: one daemon starts, the second revive waits for it", async () => {
  const d = daemon([text("hi")], { restart: false });
  await d.c.start();
  try {
    process.kill(d.c.pid, "SIGKILL");
    await waitFor(() => d.exits.length === 1, "the death");
    assert.equal(d.exits[0].restarting, false);
    await Promise.all([d.c.revive(), d.c.revive()]);
    assert.deepEqual(daemonPids(join(d.dir, "script.json")), [d.c.pid]);
    assert.equal(d.restarts(), 1);
    assert.ok((await d.c.request("getState")).model);
  } finally {
    for (const pid of daemonPids(join(d.dir, "script.json"))) if (pid !== d.c.pid) process.kill(pid, "SIGKILL"); // one a second start left running
    await d.c.stop();
  }
});

test("where the daemon is found: pi.command, then PATH, then the interpreter's module, then the installed venv", async () => {
  const storageDir = mkdtempSync(join(tmpdir(), "pi-storage-"));
  const bin = mkdtempSync(join(tmpdir(), "pi-bin-"));
  const configured = { command: "/opt/my/pi-daemon", args: [] };
  assert.equal((await locateDaemon({ configured, pathEnv: bin, interpreter: PYTHON, storageDir })).source, "pi.command");
  // nothing anywhere (an interpreter without the module)
  const saved = process.env.PYTHONPATH;
  delete process.env.PYTHONPATH;
  try {
    assert.equal(await locateDaemon({ pathEnv: bin, interpreter: "python-not-there", storageDir }), undefined);
  } finally {
    if (saved !== undefined) process.env.PYTHONPATH = saved;
  }
  // the selected interpreter with pi_daemon importable (the tests' PYTHONPATH holds it)
  const viaInterpreter = await locateDaemon({ pathEnv: bin, interpreter: PYTHON, storageDir });
  assert.deepEqual([viaInterpreter.command, viaInterpreter.args, viaInterpreter.source], [PYTHON, ["-P", "-m", "pi_daemon"], "interpreter"]);
  // the venv "Install pi-daemon" makes
  const venv = managedVenv(storageDir);
  mkdirSync(join(venv.daemon, ".."), { recursive: true });
  writeFileSync(venv.daemon, "");
  assert.deepEqual(await locateDaemon({ pathEnv: bin, storageDir }), { command: venv.daemon, args: [], source: "installed" });
  // on PATH wins over both
  writeFileSync(join(bin, "pi-daemon"), "");
  chmodSync(join(bin, "pi-daemon"), 0o755);
  assert.deepEqual(await locateDaemon({ pathEnv: bin, interpreter: PYTHON, storageDir }),
                   { command: join(bin, "pi-daemon"), args: [], source: "PATH" });
});

// A cloned repository is not trusted: a pi_daemon, venv or pip folder in it must never be what runs.
function hostileFolder(...names) {
  const work = mkdtempSync(join(tmpdir(), "pi-hostile-"));
  const marker = join(work, "ran");
  for (const name of names) {
    mkdirSync(join(work, name));
    writeFileSync(join(work, name, "__init__.py"), "");
    writeFileSync(join(work, name, "__main__.py"), `open(${JSON.stringify(marker)}, "a").write("the workspace's ${name} ran\\n")\n`);
  }
  return { work, ran: () => (existsSync(marker) ? readFileSync(marker, "utf8") : "") };
}

test("the selected interpreter starts the installed daemon, never a pi_daemon folder in the workspace", async () => {
  const { work, ran } = hostileFolder("pi_daemon");
  const found = await locateDaemon({ pathEnv: mkdtempSync(join(tmpdir(), "pi-bin-")), interpreter: PYTHON,
                                     storageDir: mkdtempSync(join(tmpdir(), "pi-storage-")) });
  const c = new PiClient({ command: found.command, args: [...found.args, "--model", "faux/echo"], cwd: work,
                           env: { ...process.env, PI_DAEMON_HOME: work } });
  try {
    await c.start();
    assert.equal((await c.request("getState")).model.id, "echo");
  } finally {
    await c.stop();
  }
  assert.equal(ran(), "");
});

test("the install runs the Python's own venv and pip, never a venv or pip folder where it is run from", async () => {
  const { work, ran } = hostileFolder("venv", "pip");
  const wheels = mkdtempSync(join(tmpdir(), "pi-wheels-"));
  writeFileSync(join(wheels, "pi_daemon-0.0.0-py3-none-any.whl"), "not a wheel");
  const before = process.cwd();
  process.chdir(work);
  try {
    // the venv is made (by the real venv module); pip then refuses the broken wheel
    await assert.rejects(installDaemon({ python: PYTHON, storageDir: mkdtempSync(join(tmpdir(), "pi-storage-")),
                                         wheelDir: wheels, log: () => {} }),
                         /Installing pi-daemon and its dependencies failed/);
  } finally {
    process.chdir(before);
  }
  assert.equal(ran(), "");
});

test("the install needs Python 3.11+: the first one found is used, none found is a clear error", async () => {
  const found = await findPython(["python-not-there", PYTHON]);
  assert.equal(found.python, PYTHON);
  assert.match(found.version, /^3\.(1[1-9]|[2-9]\d)\.\d+$/);
  await assert.rejects(findPython(["python-not-there", "python9-not-there"]),
                       /needs Python 3\.11 or newer and none was found \(looked for python-not-there, python9-not-there\)/);
  await assert.rejects(installDaemon({ python: PYTHON, storageDir: mkdtempSync(join(tmpdir(), "pi-storage-")),
                                       wheelDir: join(tmpdir(), "no-wheels-here"), log: () => {} }),
                       /holds no pi-daemon wheel/);
});

test("save before commands: the edited document is asked for and saved, the command sees it, the result says so", async () => {
  const { fsHandlers, applyTextEdits, uriPath } = require("../dist/editorFs.js");
  const docs = new Map(); // open documents, unsaved text included
  const host = {
    document: (path) => docs.get(path), dirty: () => [...docs.keys()],
    async applyEdit(_label, edit) {
      for (const change of edit.documentChanges) {
        const path = uriPath(change.textDocument.uri);
        const doc = docs.get(path) ?? { content: readFileSync(path, "utf8"), version: 1 };
        docs.set(path, { content: applyTextEdits(doc.content, change.edits), version: doc.version + 1 });
      }
      return { applied: true };
    },
  };
  const asked = [];
  const save = async ({ paths }) => {
    asked.push(paths);
    for (const path of paths) writeFileSync(path, docs.get(path).content);
    return { saved: paths, failed: [] };
  };
  const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
  const work = mkdtempSync(join(tmpdir(), "pi-life-work-")); // not the daemon's home, which its sandbox hides
  const d = daemon([call("e", "edit", { path: "a.py", edits: [{ oldText: "x = 1", newText: "x = 2" }] }),
                    call("b", "bash", { command: "cat a.py" }), text("done")],
                   { cwd: work, fs: fsHandlers(host), save, onPermission: async () => "allow_once" });
  writeFileSync(join(work, "a.py"), "x = 1\n");
  try {
    const init = await d.c.start();
    assert.equal(init.capabilities.fs.save, true);
    await d.c.prompt("bump x and show it");
    await waitFor(() => d.events.some((e) => e.type === "agent_settled"), "the run");
    assert.deepEqual(asked, [[join(work, "a.py")]]);
    const bash = d.events.find((e) => e.type === "tool_execution_end" && e.toolName === "bash");
    assert.match(bash.result.content[0].text, /^\[saved before running: a\.py\]\n[\s\S]*x = 2/);
    assert.deepEqual(bash.result.details.savedFiles, ["a.py"]);
  } finally {
    await d.c.stop();
  }
});
