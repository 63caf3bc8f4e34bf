// The chat view's page in a real browser (the system's Chromium, headless), fed with the
// events of the real daemon as the extension forwards them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";
import { openView as openPage, poster, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient } = require("../dist/rpcClient.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

const held = useBrowser();

const workspace = (replies, options = {}) => pageWorkspace(replies, options, "pi-webview-");
const call = (name, args) => ({ content: [{ type: "toolCall", id: `c_${name}`, name, arguments: args }], stopReason: "toolUse" });

const openView = () => openPage(held.browser, 500);

// A daemon whose events go to the page in order, as the extension posts them.
async function daemon(dir, page, extra = {}) {
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({
    command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script",
                            ...(extra.daemonArgs ?? [])], cwd: dir, env,
  });
  const post = poster(page);
  const events = [];
  c.onEvent((_id, event) => {
    events.push(event);
    post({ type: "event", event });
  });
  c.settled = async (n = 1) => {
    await waitFor(() => events.filter((e) => e.type === "agent_settled").length >= n);
    await post.drained();
  };
  c.events = events;
  await c.start();
  return c;
}

const posted = (page) => page.evaluate(() => window.posted);

test("while an answer streams, an opened thinking block stays open, the view stays put and a queued item can be clicked away", async () => {
  // long enough that the answer still streams (seconds after "Paragraph 40") while the test clicks on a loaded host
  const long = Array.from({ length: 240 }, (_, i) => `Paragraph ${i} of the answer.`).join("\n\n");
  const dir = workspace([{ content: [{ type: "thinking", thinking: "thinking it over" }, { type: "text", text: long }] },
                         text("the follow-up answer")], { chunkSize: 4, delayMs: 4 });
  const page = await openView();
  const c = await daemon(dir, page);
  await c.prompt("write a lot");
  await page.waitForSelector("details.thinking");
  await page.click("details.thinking summary"); // the user opens it
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 20"));
  await page.evaluate(() => { document.getElementById("log").scrollTop = 0; }); // and reads from the top
  const { queueId } = await c.prompt("and then this", "followUp");
  await page.evaluate((id) => window.postMessage({ type: "queue", items: [{ id, text: "and then this", kind: "followUp" }] }, "*"), queueId);
  const item = await page.waitForSelector("#queue li");
  await page.evaluate(() => { document.querySelector("#queue li").marked = true; });
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 40"));
  assert.equal(await page.evaluate(() => document.querySelector("#queue li").marked), true, "the same item, not a new one");
  await item.click();
  assert.ok((await posted(page)).some((m) => m.type === "removeQueued" && m.queueId === queueId));
  const removed = await c.request("removeQueued", { queueId });
  assert.ok(removed);
  await c.settled();
  assert.equal(await page.evaluate(() => document.querySelector("details.thinking").open), true);
  assert.equal(await page.evaluate(() => document.getElementById("log").scrollTop), 0);
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 239")); // drawn, maybe a frame later
  assert.ok(!c.events.some((e) => e.type === "message_start" && e.message.role === "user" && e.message.content?.[0]?.text === "and then this"),
            "the removed follow-up was not sent");
  await c.stop();
  await page.close();
});

test("answers are Markdown: code blocks with a copy button, raw HTML shown as text", async () => {
  const answer = "Run **this**:\n\n```python\nprint('hi')\n```\n\n<img src=x onerror=\"window.hacked=1\"> done";
  const dir = workspace([text(answer)], { chunkSize: 5, delayMs: 1 });
  const page = await openView();
  const c = await daemon(dir, page);
  await c.prompt("show me");
  await c.settled();
  assert.equal(await page.textContent(".assistant strong"), "this");
  assert.equal(await page.textContent(".assistant pre code"), "print('hi')\n");
  assert.equal(await page.locator(".assistant img").count(), 0);
  assert.ok((await page.textContent(".assistant")).includes("<img src=x"));
  await page.click(".assistant .code button.copy");
  assert.ok((await posted(page)).some((m) => m.type === "copy" && m.text === "print('hi')\n"));
  assert.equal(await page.textContent(".assistant .code button.copy"), "Copied");
  await c.stop();
  await page.close();
});

test("a resumed session shows its tool calls with their outputs", async () => {
  const dir = workspace([call("bash", { command: "echo from-the-tool" }), text("all done")]);
  const first = await daemon(dir, await openView(), { daemonArgs: ["--allow", "bash"] });
  await first.prompt("run it");
  await first.settled();
  const { sessionId } = await first.request("getState");
  await first.stop();
  const page = await openView();
  const second = await daemon(dir, page);
  await second.request("session/load", { sessionId, replay: true });
  await page.waitForFunction(() => document.body.innerText.includes("all done"));
  assert.equal(await page.textContent("details.tool summary"), "bash echo from-the-tool");
  await page.click("details.tool summary");
  assert.equal(await page.textContent("details.tool .args"), "$ echo from-the-tool");
  assert.equal((await page.textContent("details.tool .output")).trim(), "from-the-tool");
  await second.stop();
  await page.close();
});

test("a stopped answer says so quietly, not as an error", async () => {
  const dir = workspace([text("x".repeat(5000))], { chunkSize: 1, delayMs: 3 });
  const page = await openView();
  const c = await daemon(dir, page);
  await c.prompt("talk");
  await page.waitForFunction(() => document.body.innerText.includes("xxxxxxxx"));
  await c.abort();
  await c.settled();
  assert.equal(await page.textContent(".assistant .note"), "stopped");
  assert.equal(await page.locator(".error").count(), 0);
  await c.stop();
  await page.close();
});

test("the page's Content-Security-Policy runs only the view's own script", async () => {
  const page = await openView();
  const csp = await page.getAttribute("meta[http-equiv=Content-Security-Policy]", "content");
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-[A-Za-z0-9]{32}'/);
  await page.evaluate(() => {
    const s = document.createElement("script");
    s.textContent = "window.injected = 1";
    document.body.append(s);
  });
  assert.equal(await page.evaluate(() => window.injected), undefined);
  await page.close();
});

test("typing / offers the slash commands; Tab completes; a path is no command", async () => {
  const page = await openView();
  await page.evaluate(() => window.postMessage({ type: "commands", commands: [
    { name: "compact", description: "Summarise", source: "builtin", argumentHint: "[focus]" },
    { name: "review", description: "Review", source: "template" }] }, "*"));
  await page.click("#input");
  await page.keyboard.type("/re");
  await page.waitForFunction(() => document.querySelectorAll("#suggest li").length === 1);
  assert.match(await page.textContent("#suggest"), /\/review/);
  assert.doesNotMatch(await page.textContent("#suggest"), /compact/);
  await page.keyboard.press("Tab");
  assert.equal(await page.inputValue("#input"), "/review ");
  assert.equal(await page.locator("#suggest li").count(), 0);
  await page.fill("#input", "");
  await page.keyboard.type("/usr/bin/x");
  assert.equal(await page.locator("#suggest li").count(), 0);
  assert.ok(!(await page.evaluate(() => window.posted.some((m) => m.type === "send"))), "nothing was sent while completing");
  await page.close();
});

test("typing @ offers the workspace's files, filtered as typed; the chosen one is sent as context and shown", async () => {
  const dir = workspace([text("seen it")]);
  mkdirSync(join(dir, "src"));
  writeFileSync(join(dir, "src", "main.py"), "print('main')\n");
  writeFileSync(join(dir, "src", "util.py"), "def util(): pass\n");
  writeFileSync(join(dir, "README.md"), "# readme\n");
  const page = await openView();
  const c = await daemon(dir, page);
  await page.click("#input");
  await page.keyboard.type("explain @");
  await page.waitForFunction(() => window.posted.some((m) => m.type === "files"));
  // the extension host answers with the workspace's files
  await page.evaluate(() => window.postMessage({ type: "files", files: ["README.md", "src/main.py", "src/util.py", "src/maintenance.txt"] }, "*"));
  await page.waitForFunction(() => document.querySelectorAll("#suggest li").length === 4);
  await page.keyboard.type("ma");
  await page.waitForFunction(() => document.querySelectorAll("#suggest li").length === 2);
  assert.deepEqual(await page.$$eval("#suggest li", (items) => items.map((li) => li.firstChild.textContent)),
                   ["@src/main.py", "@src/maintenance.txt"]); // the file name starts with it; shorter first
  await page.keyboard.press("ArrowDown");
  await page.keyboard.press("ArrowUp");
  await page.keyboard.press("Enter"); // inserts, does not send
  assert.equal(await page.inputValue("#input"), "explain @src/main.py ");
  assert.equal(await page.locator("#suggest li").count(), 0);
  await page.keyboard.type("and @ut");
  await page.waitForFunction(() => document.querySelectorAll("#suggest li").length === 1);
  await page.keyboard.press("Escape"); // closes the list; the text stays
  assert.equal(await page.locator("#suggest li").count(), 0);
  assert.equal(await page.inputValue("#input"), "explain @src/main.py and @ut");
  await page.keyboard.press("Backspace");
  await page.keyboard.type("t");
  await page.waitForFunction(() => document.querySelectorAll("#suggest li").length === 1);
  await page.keyboard.press("Tab");
  await page.keyboard.type("please");
  await page.keyboard.press("Enter");
  const sent = (await posted(page)).find((m) => m.type === "send");
  assert.equal(sent.text, "explain @src/main.py and @src/util.py please");
  assert.deepEqual(sent.context, [{ path: "src/main.py" }, { path: "src/util.py" }]);
  // as the extension forwards it: the daemon reads the files into the user message
  await c.prompt(sent.text, undefined, undefined, sent.context);
  await c.settled();
  const user = c.events.find((e) => e.type === "message_start" && e.message.role === "user").message;
  const stored = typeof user.content === "string" ? user.content : user.content.map((b) => b.text).join("");
  assert.ok(stored.includes("[editor context]\nsrc/main.py line 1:\n     1\tprint('main')"), stored);
  assert.equal(await page.textContent(".user details.context summary"), "context: src/main.py, src/util.py");
  assert.match(await page.textContent(".user"), /^explain @src\/main\.py and @src\/util\.py please/);
  await c.stop();
  await page.close();
});
