// What the tests of the chat's page share: the system's Chromium (headless), the page as VS Code
// shows it (the extension's HTML, its CSP and script), and a workspace with a faux model's script.
import { before, after } from "node:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { createRequire } from "node:module";
import { chromium } from "playwright-core";

const require = createRequire(import.meta.url);
const { chatHtml, newNonce } = require("../dist/chatHtml.js");
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

// A fresh folder holding the faux model's script.
export function workspace(replies, options = {}, prefix = "pi-webview-") {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, "script.json"), JSON.stringify({ modelId: "script", replies, ...options }));
  return dir;
}

export const text = (t) => ({ content: [{ type: "text", text: t }] });
