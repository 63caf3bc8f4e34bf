// Issue #39's background processes in a real VS Code (code-server), driven as a user, with the faux model's
// script: the agent starts `python3 -m http.server <port>` in the background and reaches it with curl;
//  - the chat's bash card says it runs in the background and names the process (its Processes button selects
//    it in the view); the Background Processes view under the chat lists it (command, how long it has run);
//  - Output on the card opens its output as a read-only document that follows it (the curl's request logged);
//  - Stop in the view ends it: the view and the card say "stopped", and the port is free;
//  - the daemon killed (SIGKILL) while another process runs: restarted, the view lists nothing running, the
//    card says the process no longer runs, its open output stops following, and no process of the old daemon is left.
// A screenshot after each step (prefix "proc39-").
//
//   node e2e/flows39-proc.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { join, resolve } from "node:path";
import { daemonPids, launch, python, until } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));

const port = await new Promise((ok) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => ok(port));
  });
});
const listening = () => new Promise((ok) => {
  const socket = createConnection({ port, host: "127.0.0.1" });
  socket.once("connect", () => { socket.destroy(); ok(true); });
  socket.once("error", () => ok(false));
});

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const server = `python3 -m http.server ${port} --bind 127.0.0.1`;
const script = {
  modelId: "script", chunkSize: 3, delayMs: 20,
  replies: [
    call("s1", "bash", { command: server, background: true }),
    // the agent's own bounded wait for the server to answer
    call("c1", "bash", { command: `for i in $(seq 50); do curl -s -o /dev/null -w 'HTTP %{http_code}' http://127.0.0.1:${port}/ && break; sleep 0.1; done` }),
    text(`The server answers on port ${port}; it keeps running in the background.`),
    call("w1", "bash", { command: "sleep 300", background: true }),
    text("A sleeper runs in the background."),
  ],
};

const kit = await launch({
  cache, out, prefix: "proc39-",
  prepare(root, work) {
    mkdirSync(join(root, "home"));
    // the sandbox lets commands use the network (loopback too), so the server is reachable from outside it
    writeFileSync(join(root, "home", "settings.json"), JSON.stringify({ sandbox: { network: true } }));
    writeFileSync(join(root, "script.json"), JSON.stringify(script));
    writeFileSync(join(work, "index.html"), "<h1>hello from the background</h1>\n");
  },
  settings: (root) => ({ "pi.command": python,
                         "pi.args": ["-m", "pi_daemon", "--faux-script", join(root, "script.json"), "--model", "faux/script",
                                     "--allow", "bash"] }),
});
const { page, chat, run, T } = kit;
const processes = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Background Processes" }) });
const row = processes.locator(".monaco-list-row", { hasText: `http.server ${port}` });

try {
  await kit.open();
  await run("the agent starts a web server in the background: the card and the Background Processes view show it running", async () => {
    await kit.openChat("faux/script");
    await kit.send("start a web server and check it answers");
    await chat().locator(".assistant", { hasText: "keeps running in the background" }).waitFor({ timeout: T });
    await chat().locator("details.tool summary", { hasText: "(in the background)" }).waitFor({ timeout: T });
    await chat().locator(".process-note .process-status", { hasText: /: running · \d+/ }).waitFor({ timeout: T });
    await row.waitFor({ timeout: T });
    assert.match(await row.innerText(), /^\s*\d+s\s*python3 -m http\.server/); // how long it has run, the command
    assert.ok(await listening(), "the server accepts connections");
    await chat().locator(".process-note button", { hasText: "Processes" }).click(); // the card leads to its row
    await processes.locator(".monaco-list-row.selected", { hasText: `http.server ${port}` }).waitFor({ timeout: T });
    await page.mouse.move(700, 500); // the row as it reads without the pointer on it (its Stop shows on hover)
    const curl = chat().locator("details.tool", { hasText: "curl" });
    await curl.locator("summary").click();
    assert.match(await curl.locator(".output").textContent(), /HTTP 200/);
  });

  await run("Output on the card opens the process's output, which follows it", async () => {
    await chat().locator(".process-note button", { hasText: "Output" }).click();
    const editor = page.locator(".monaco-editor .view-lines", { hasText: "GET / HTTP/1.1" });
    await editor.waitFor({ timeout: T });
    await page.locator(".tabs-container .tab", { hasText: `(` }).filter({ hasText: "http.server" }).waitFor({ timeout: T });
    await fetch(`http://127.0.0.1:${port}/index.html`); // the user's own request: logged while the document is open
    await page.locator(".monaco-editor .view-lines", { hasText: "GET /index.html" }).waitFor({ timeout: T });
  });

  await run("Stop in the view ends it: the view and the card say stopped, the port is free", async () => {
    await row.hover();
    await row.locator(".action-label[aria-label^='pi: Stop a Background Process']").click({ timeout: T });
    await processes.locator(".monaco-list-row", { hasText: /stopped · \d+s/ }).waitFor({ timeout: T });
    await page.mouse.move(700, 500);
    await chat().locator(".process-note .process-status", { hasText: /: stopped · ran \d+/ }).waitFor({ timeout: T });
    await until(async () => !(await listening()), "the port free", 5000);
    await page.locator(".monaco-editor .view-lines", { hasText: "[stopped]" }).waitFor({ timeout: T });
  });

  await run("the daemon killed while a process runs: back again, nothing is listed running and the card says so", async () => {
    await kit.send("and a sleeper");
    await chat().locator(".assistant", { hasText: "A sleeper runs" }).waitFor({ timeout: T });
    const sleeper = processes.locator(".monaco-list-row", { hasText: "sleep 300" });
    await sleeper.waitFor({ timeout: T });
    await chat().locator(".process-note").last().locator("button", { hasText: "Output" }).click(); // its (empty) output open
    await page.locator(".tabs-container .tab.active", { hasText: "sleep 300" }).waitFor({ timeout: T });
    const [pid] = daemonPids(join(kit.root, "script.json"));
    process.kill(pid, "SIGKILL");
    await chat().locator(".notice", { hasText: "was restarted" }).waitFor({ timeout: T });
    await sleeper.waitFor({ state: "detached", timeout: T });
    await processes.getByText("No background processes.").waitFor({ timeout: T });
    // its output document stops following: the next daemon's p2 is another process
    await page.locator(".monaco-editor .view-lines", { hasText: "no longer followed: the daemon that ran it ended" }).waitFor({ timeout: T });
    const cards = chat().locator(".process-note .process-status");
    await cards.last().filter({ hasText: /: no longer running$/ }).waitFor({ timeout: T });
    await until(() => !execFileSync("ps", ["-eo", "args"], { encoding: "utf8" }).split("\n").some((l) => l.trim() === "sleep 300"),
                "no sleep 300 left of the killed daemon", 10000);
  });
} catch (error) {
  await kit.fail(error);
}
const ok = await kit.close();
console.log(`screenshots in ${out}`);
process.exit(ok ? 0 : 1);
