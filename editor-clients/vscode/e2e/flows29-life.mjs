// Issue #29's lifecycle and first-run flows, each in its own code-server, driven as a user (README's VS Code
// quick start is these steps):
//  - save: the agent edits a file (unsaved in the editor), then runs a check with bash that sees the edit;
//    the file was saved first and the chat says so;
//  - the daemon killed (SIGKILL) while idle and mid-answer: the chat says so, the same conversation is back
//    (the cut-off answer kept and marked, Continue offered) and takes the next prompt;
//  - install: no pi-daemon anywhere → "Install pi-daemon" (a venv in the extension's storage, pip installing
//    the wheel inside the .vsix) → the first prompt, kept while no model is chosen, answered by the offline demo;
//  - a local model server: a tiny OpenAI-compatible server started here on 127.0.0.1, given by its URL.
// A screenshot after each step (prefix "life-").
//
//   node e2e/flows29-life.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PYTHONPATH, PI_E2E_OUT)
import assert from "node:assert/strict";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join, resolve } from "node:path";
import { launch, daemonSettings, daemonPids, python } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));
const INSTALL_T = 15 * 60_000; // pip fetching the daemon's dependencies

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const SAVE = "Rename the greeting";
const echo = { echo: true };

// An answer shown and its run over (the Stop button off again).
const answered = async ({ chat, T }, text) => {
  await chat().locator(".assistant", { hasText: text }).waitFor({ timeout: T });
  await chat().locator("#stop:disabled").waitFor({ timeout: T });
};
const toast = (page, text) => page.locator(".notifications-toasts .notification-toast", { hasText: text });
const sessionFiles = (work) => readdirSync(join(work, ".pi", "sessions")).map((f) => join(work, ".pi", "sessions", f));

function killDaemon(root) {
  const [pid] = daemonPids(join(root, "script.json"));
  process.kill(pid, "SIGKILL");
  return pid;
}

async function saveAndKill() {
  // The save flow's replies answer only its conversation (`when`): a restarted daemon starts its script over,
  // and every other prompt gets the offline echo.
  const script = {
    modelId: "script", chunkSize: 3, delayMs: 25,
    replies: [
      { ...call("e1", "edit", { path: "app.py", edits: [{ oldText: '"hello"', newText: '"hi"' }] }), when: SAVE },
      { ...call("b1", "bash", { command: "python3 -c \"import app; print('greeting is', app.GREETING)\"" }), when: SAVE },
      { ...text("The check sees the new greeting."), when: SAVE },
      ...Array(12).fill(echo),
    ],
  };
  const kit = await launch({
    cache, out, prefix: "life-",
    prepare: (_root, work) => writeFileSync(join(work, "app.py"), 'GREETING = "hello"\n'),
    settings: (root) => {
      const daemon = daemonSettings(root, script);
      return { ...daemon, "pi.args": [...daemon["pi.args"], "--yes"], "files.autoSave": "off" }; // as on the desktop
    },
  });
  const { page, chat, run, send, command, openFile, root, work, T } = kit;
  try {
    await kit.open();
    await run("open the chat", () => kit.openChat());

    await run("killed while idle: the chat says so and the same conversation is back", async () => {
      await command("pi: New Session");
      await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
      await send("first question");
      await answered(kit, "You said: first question");
      killDaemon(root);
      await chat().locator(".notice", { hasText: "stopped (killed by SIGKILL) and was restarted; this conversation is loaded again" })
        .waitFor({ timeout: T });
      await chat().locator(".user", { hasText: "first question" }).waitFor({ timeout: T });
      await chat().locator(".assistant", { hasText: "You said: first question" }).waitFor({ timeout: T });
    });

    await run("the next prompt goes to the same conversation", async () => {
      await send("second question");
      await answered(kit, "You said: second question");
      assert.equal(await chat().locator(".user").count(), 2);
      assert.equal(await chat().locator(".notice button").count(), 0, "nothing was cut off: no Continue");
      const stored = sessionFiles(work).map((f) => readFileSync(f, "utf8"))
        .filter((s) => s.includes("first question"));
      assert.equal(stored.length, 1);
      assert.ok(stored[0].includes("second question"), "the second prompt went into the first one's session");
    });

    const story = `Tell me a story about ${"a long road and ".repeat(60)}the end.`;
    await run("killed mid-answer: the partial answer stays, marked cut off, with Continue; nothing stays busy", async () => {
      await send(story);
      const streaming = chat().locator(".assistant", { hasText: "a long road and a long road" });
      await streaming.waitFor({ timeout: T });
      killDaemon(root);
      await chat().locator(".notice", { hasText: "killed by SIGKILL" }).locator("button", { hasText: "Continue" })
        .waitFor({ timeout: T });
      await chat().locator(".assistant .error", { hasText: "cut off" }).waitFor({ timeout: T });
      await chat().locator(".user", { hasText: "second question" }).waitFor({ timeout: T });
      assert.ok(await chat().locator("#stop").isDisabled(), "the Stop button is off: nothing runs");
    });

    await run("Continue answers the cut-off prompt in the same conversation", async () => {
      await chat().locator(".notice button", { hasText: "Continue" }).click();
      await chat().locator(".assistant:not(:has(.error))", { hasText: "the end." }).waitFor({ timeout: T });
      await chat().locator("#stop:disabled").waitFor({ timeout: T });
      await send("are you back?");
      await answered(kit, "You said: are you back?");
      const stored = sessionFiles(work).map((f) => readFileSync(f, "utf8")).filter((s) => s.includes("first question"));
      assert.ok(stored[0].includes("are you back?"));
    });
    await run("the agent edits app.py, then its check sees the edit: app.py was saved first, and the chat says so", async () => {
      await command("pi: New Session");
      await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
      await openFile("app.py", "hello");
      await send(`${SAVE} to hi, then check it`);
      await chat().locator(".assistant", { hasText: "The check sees the new greeting." }).waitFor({ timeout: T });
      const bash = chat().locator("details.tool", { hasText: "greeting is" });
      const shown = await bash.textContent();
      assert.match(shown, /greeting is hi/);
      assert.match(shown, /saved before running: app\.py/);
      await chat().locator(".saved", { hasText: "Saved app.py before running" }).waitFor({ timeout: T });
      assert.equal(readFileSync(join(work, "app.py"), "utf8"), 'GREETING = "hi"\n');
      assert.equal(await page.locator(".tabs-container .tab.dirty", { hasText: "app.py" }).count(), 0);
      await chat().locator(".saved").scrollIntoViewIfNeeded(); // for the screenshot
    });

    await run("three quick deaths: no more restarts, the chat offers Restart, which brings the conversation back", async () => {
      await command("pi: New Session");
      await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
      await send("before the deaths");
      await answered(kit, "You said: before the deaths");
      for (let death = 1; death <= 3; death++) {
        killDaemon(root);
        if (death === 3) break;
        // "starting it again…" at once, then (the chat redrawn) "was restarted"
        const starting = chat().locator(".notice", { hasText: "starting it again" });
        await starting.waitFor({ timeout: T });
        await starting.waitFor({ state: "detached", timeout: T });
        await chat().locator(".notice", { hasText: "was restarted" }).waitFor({ timeout: T });
      }
      const notice = chat().locator(".notice", { hasText: "again soon after starting, so it was not restarted" });
      await notice.waitFor({ timeout: T });
      await kit.shot("life-given-up-with-restart");
      await notice.locator("button", { hasText: "Restart" }).click();
      await notice.waitFor({ state: "detached", timeout: T }); // the chat redrawn
      await chat().locator(".notice", { hasText: "was restarted; this conversation is loaded again" }).waitFor({ timeout: T });
      await chat().locator(".user", { hasText: "before the deaths" }).waitFor({ timeout: T });
      await send("still there?");
      await answered(kit, "You said: still there?");
    });
  } catch (error) {
    await kit.fail(error);
  }
  return kit.close();
}

async function installThenFirstRun() {
  // No pi.command, no pi-daemon on PATH, no interpreter with the module: nothing to start until installed.
  const kit = await launch({ cache, out, prefix: "life-install-", settings: () => ({}), env: { PYTHONPATH: "" } });
  const { page, chat, run, send, pick, T } = kit;
  try {
    await kit.open();
    await run("open the chat: pi-daemon is not installed, and the extension offers to install it", async () => {
      await kit.openChat();
      await toast(page, "pi-daemon is not installed").waitFor({ timeout: T });
    });
    await run("type the first prompt; click Install pi-daemon: it installs with progress", async () => {
      await send("hello pi, what can you do?");
      await toast(page, "pi-daemon is not installed").locator(".monaco-button", { hasText: "Install pi-daemon" }).click();
      await toast(page, "installing pi-daemon").waitFor({ timeout: T });
    });
    await run("installed and started: no model yet, so it asks how to answer, the prompt kept", async () => {
      await page.locator(".quick-input-widget input[placeholder*='No model is chosen yet']").waitFor({ timeout: INSTALL_T });
      assert.equal(await chat().locator(".user").count(), 0); // not sent yet, not lost either
    });
    await run("choose the offline demo: the kept prompt is answered", async () => {
      await pick("Try the offline demo");
      await chat().locator(".user", { hasText: "hello pi, what can you do?" }).waitFor({ timeout: T });
      await chat().locator(".assistant", { hasText: "You said: hello pi, what can you do?" }).waitFor({ timeout: T });
      await page.locator(".statusbar-item", { hasText: "π faux/echo" }).waitFor({ timeout: T });
    });
  } catch (error) {
    await kit.fail(error);
  }
  return kit.close();
}

// An OpenAI-compatible server as small as can be: one model, each answer streamed in a few chunks.
function localModelServer() {
  const server = createServer((request, response) => {
    if (request.method === "GET" && request.url === "/v1/models") {
      response.writeHead(200, { "content-type": "application/json" });
      return response.end(JSON.stringify({ object: "list", data: [{ id: "tiny-local", object: "model" }] }));
    }
    if (request.method === "POST" && request.url === "/v1/chat/completions") {
      response.writeHead(200, { "content-type": "text/event-stream" });
      const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 0,
        model: "tiny-local", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      for (const piece of ["Hello from ", "the tiny ", "local server."]) response.write(chunk({ content: piece }));
      response.write(chunk({}, "stop"));
      return response.end("data: [DONE]\n\n");
    }
    response.writeHead(404).end();
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok(server)));
}

async function localServerFirstRun() {
  const server = await localModelServer();
  const url = `http://127.0.0.1:${server.address().port}/v1`;
  const kit = await launch({ cache, out, prefix: "life-local-",
                             settings: () => ({ "pi.command": python, "pi.args": ["-m", "pi_daemon"] }) });
  const { page, chat, run, send, pick, T } = kit;
  try {
    await kit.open();
    await run("open the chat and ask: no model yet, so it asks how to answer", async () => {
      await kit.openChat();
      await send("hello local model");
      await page.locator(".quick-input-widget input[placeholder*='No model is chosen yet']").waitFor({ timeout: T });
    });
    await run("use a local model server: given by its URL", async () => {
      await pick("Use a local model server");
      const input = page.locator(".quick-input-widget input");
      await page.locator(".quick-input-widget", { hasText: "OpenAI-compatible URL" }).waitFor({ timeout: T });
      await input.fill(url);
      await input.press("Enter");
    });
    await run("the kept prompt is answered by the local server's model", async () => {
      await chat().locator(".user", { hasText: "hello local model" }).waitFor({ timeout: T });
      await chat().locator(".assistant", { hasText: "Hello from the tiny local server." }).waitFor({ timeout: T });
      await page.locator(".statusbar-item", { hasText: "tiny-local" }).waitFor({ timeout: T });
    });
  } catch (error) {
    await kit.fail(error);
  } finally {
    server.close();
  }
  return kit.close();
}

const only = process.env.PI_E2E_LIFE; // one flow group while working on it: save, install, local
const groups = { save: saveAndKill, install: installThenFirstRun, local: localServerFirstRun };
let ok = true;
for (const [name, flow] of Object.entries(groups)) if (!only || only === name) ok = (await flow()) && ok;
console.log(`screenshots in ${out}`);
process.exit(ok ? 0 : 1);
