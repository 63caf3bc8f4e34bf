// What the tests of the chat's page share: the system's Chromium (headless), the page as VS Code
// shows it (the extension's HTML, its CSP and script), a workspace with a faux model's script, and the
// real daemon feeding the page as the extension does.
import { before, after } from "node:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";
import { waitFor } from "./wait.mjs";

const require = createRequire(import.meta.url);
const { chatHtml, newNonce } = require("../dist/chatHtml.js");
const { PiClient } = require("../dist/rpcClient.js");
const { SubagentRouter } = require("../dist/subagents.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const LAUNCH = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"];

// One browser for the test file: launched before its tests, closed after them.
export function useBrowser() {
  const held = {};
  before(async () => { held.browser = await chromium.launch({ executablePath: CHROMIUM, args: LAUNCH }); });
  after(async () => { await held.browser?.close(); });
  return held;
}

// The page as VS Code would show it; what it posts to the extension is kept in window.posted.
export async function openView(browser, height = 500) {
  const dir = mkdtempSync(join(tmpdir(), "pi-page-"));
  const html = chatHtml({ cspSource: "file:", scriptUri: pathToFileURL(resolve("dist/webview.js")).href, nonce: newNonce() });
  writeFileSync(join(dir, "chat.html"), html);
  const page = await browser.newPage({ viewport: { width: 420, height } });
  await page.addInitScript(() => {
    window.posted = [];
    window.acquireVsCodeApi = () => ({ postMessage: (m) => window.posted.push(m), setState: (s) => (window.state = s) });
  });
  await page.goto(pathToFileURL(join(dir, "chat.html")).href);
  await page.waitForFunction(() => window.posted.some((m) => m.type === "ready"));
  return page;
}

// Posts messages to the page in order, as the extension posts to its view: `post(message)`; `post.drained()`
// waits until the page has handled those on their way (a posted message is handled in a later task of the
// page, which a test's next look at the page may come before on a busy host). Once the page is closed (its
// test ended, as a closed view) they are dropped, both those sent later and one in flight that the close cut
// off; any other failure is the test's.
export function poster(page) {
  let chain = Promise.resolve();
  const closed = async () => {
    // the close's own event may come just after the evaluate it cut off failed
    if (!page.isClosed()) await new Promise((done) => { page.once("close", done); setTimeout(done, 2000).unref(); });
    return page.isClosed();
  };
  const send = (script, arg) => {
    chain = chain.then(async () => {
      if (page.isClosed()) return;
      try {
        await page.evaluate(script, arg);
      } catch (error) {
        if (!(await closed())) throw error;
      }
    });
    return chain;
  };
  const post = (message) => send((m) => window.postMessage(m, "*"), message);
  // a mark posted after them comes back once the page's handlers have seen every message before it
  post.drained = () => send((mark) => new Promise((done) => {
    const seen = ({ data }) => { if (data?.type === mark) { window.removeEventListener("message", seen); done(); } };
    window.addEventListener("message", seen);
    window.postMessage({ type: mark }, "*");
  }), `test-drained-${Math.random()}`);
  return post;
}

// A fresh folder holding the faux model's script.
export function workspace(replies, options = {}, prefix = "pi-webview-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies, ...options }));
  return dir;
}

export const text = (t) => ({ content: [{ type: "text", text: t }] });

// The daemon on the workspace's faux script, its events posted to the page as extension.ts does: a
// subagent's as `subevent`, busy on agent_start / agent_settled. `c.events` holds {sessionId, event};
// `c.settled(sessionId, n)` waits for the n-th agent_settled of that session (none given: of a session
// that is not a subagent's). `options` go to the PiClient (onPermission, onAskUser …).
export async function pageDaemon(dir, page, args = [], options = {}) {
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({ command: PYTHON, cwd: dir, env,
                           args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script", ...args],
                           ...options });
  const router = new SubagentRouter();
  const events = [];
  const toPage = poster(page);
  c.onEvent((sessionId, event) => {
    events.push({ sessionId, event });
    const child = router.route(sessionId, event) === "child";
    toPage(child ? { type: "subevent", sessionId, event } : { type: "event", event });
    if (!child && (event.type === "agent_start" || event.type === "agent_settled"))
      toPage({ type: "busy", busy: event.type === "agent_start" });
  });
  c.events = events;
  c.toPage = toPage;
  c.router = router;
  c.settled = async (sessionId, n = 1) => {
    const mine = (e) => sessionId ? e.sessionId === sessionId : !router.children.has(e.sessionId);
    await waitFor(() => events.filter((e) => e.event.type === "agent_settled" && mine(e)).length >= n, "the run settled");
    await toPage.drained();
  };
  await c.start();
  return c;
}
