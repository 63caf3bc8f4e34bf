// Issue #29's chat page in a real browser (the system's Chromium, headless), fed with the real
// daemon's events: code blocks in syntax colours, an image pasted into the input sent as a prompt
// image (kept in the session, drawn as a thumbnail), and a match of History's search shown.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { createRequire } from "node:module";
import { openView as openPage, poster, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient } = require("../dist/rpcClient.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";
// A 24×16 PNG, red on the left, blue on the right.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAH0lEQVR42mO4oKBAECk4XCCIGEYNGjVo1KBRgygzCAAOOLAQB3488AAAAABJRU5ErkJggg==";

const held = useBrowser();
const openView = () => openPage(held.browser, 600);

async function daemon(dir, page) {
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({ command: PYTHON, args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"),
                                                   "--model", "faux/script"], cwd: dir, env });
  const post = page ? poster(page) : undefined;
  const events = [];
  c.onEvent((_id, event) => {
    events.push(event);
    post?.({ type: "event", event });
  });
  c.settled = async () => {
    await waitFor(() => events.some((e) => e.type === "agent_settled"), "the run settled");
    await post?.drained();
  };
  await c.start();
  return c;
}

test("a code block is drawn in syntax colours: keywords, strings, comments and numbers each their own", async () => {
  const answer = "Here:\n\n```python\ndef greet(name):\n    # say hello\n    return \"hi \" + name * 3\n```\n\nand `def` inline stays plain.";
  const dir = pageWorkspace([text(answer)]);
  const page = await openView();
  const c = await daemon(dir, page);
  try {
    await c.prompt("show me code");
    await c.settled();
    const code = page.locator(".assistant pre code.language-python");
    await code.waitFor();
    const tokens = await page.evaluate(() => [...document.querySelectorAll(".assistant pre code span")]
      .map((s) => [s.className, s.textContent, getComputedStyle(s).color]));
    const of = (cls) => tokens.filter(([c]) => c === cls).map(([, t]) => t);
    assert.deepEqual(of("hljs-keyword"), ["def", "return"]);
    assert.deepEqual(of("hljs-string"), ['"hi "']);
    assert.deepEqual(of("hljs-comment"), ["# say hello"]);
    assert.deepEqual(of("hljs-number"), ["3"]);
    const colours = new Set(tokens.map(([, , colour]) => colour));
    assert.ok(colours.size >= 4, `each kind has its own colour: ${[...colours]}`);
    assert.equal(await code.innerText(), 'def greet(name):\n    # say hello\n    return "hi " + name * 3\n', "the code itself is unchanged");
    assert.equal(await page.locator(".assistant p code span").count(), 0, "inline code is not coloured");
  } finally {
    await c.stop();
  }
});

test("an image pasted into the input shows as a chip, can be removed, and is sent with the prompt", async () => {
  const dir = pageWorkspace([text("I see a small red square.")]);
  const page = await openView();
  const c = await daemon(dir, page);
  try {
    const paste = () => page.evaluate((data) => {
      const bytes = Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], "shot.png", { type: "image/png" }));
      document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, PNG);
    await paste();
    await paste();
    await page.waitForFunction(() => document.querySelectorAll("#attachments .chip img").length === 2);
    await page.click("#attachments .chip:first-child button.remove");
    await page.waitForFunction(() => document.querySelectorAll("#attachments .chip").length === 1);
    await page.fill("#input", "what is in this picture?");
    await page.press("#input", "Enter");
    const sent = (await page.evaluate(() => window.posted)).find((m) => m.type === "send");
    assert.equal(sent.text, "what is in this picture?");
    assert.deepEqual(sent.images, [{ type: "image", mimeType: "image/png", data: PNG }]);
    assert.equal(await page.locator("#attachments .chip").count(), 0, "the chip goes with the message");
    // as the extension sends it
    await c.prompt(sent.text, undefined, undefined, undefined, sent.images);
    await c.settled();
    await page.locator(".user .images img.thumb").waitFor();
    assert.equal(await page.locator(".user .images img.thumb").evaluate((img) => img.complete && img.naturalWidth), 24, "the image decoded and drawn");
    const { entries } = await c.request("session/entries");
    const stored = entries.find((e) => e.type === "message" && e.message.role === "user").message.content;
    assert.deepEqual(stored.find((b) => b.type === "image"), { type: "image", mimeType: "image/png", data: PNG });
  } finally {
    await c.stop();
  }
});

test("a pasted text stays text; Enter on an empty input with no image sends nothing", async () => {
  const page = await openView();
  await page.focus("#input");
  await page.evaluate(() => {
    const transfer = new DataTransfer();
    transfer.setData("text/plain", "plain words");
    document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
  });
  assert.equal(await page.locator("#attachments .chip").count(), 0);
  await page.press("#input", "Enter");
  assert.equal((await page.evaluate(() => window.posted)).filter((m) => m.type === "send").length, 0);
});

test("a search match is marked in its message, its folded tool output opened, and scrolled to", async () => {
  const long = Array.from({ length: 60 }, (_, i) => `Line ${i} of the answer.`).join("\n\n");
  const dir = pageWorkspace([
    { content: [{ type: "toolCall", id: "c1", name: "bash", arguments: { command: "echo needle-in-output" } }], stopReason: "toolUse" },
    text(long),
  ]);
  const page = await openView();
  const c = await daemon(dir, page);
  try {
    await c.request("prompt", { text: "run it" });
    await c.settled();
    const { entries } = await c.request("session/entries");
    const result = entries.find((e) => e.type === "message" && e.message.role === "toolResult");
    await page.evaluate(() => { const log = document.getElementById("log"); log.scrollTop = log.scrollHeight; });
    await page.evaluate((entryId) => window.postMessage({ type: "reveal", query: "NEEDLE-in", entryId }, "*"), result.id);
    const mark = page.locator("details.tool mark.found");
    await mark.waitFor();
    assert.equal(await mark.textContent(), "needle-in");
    assert.equal(await page.locator("details.tool").evaluate((d) => d.open), true);
    assert.ok(await mark.isVisible());
    const box = await mark.boundingBox();
    assert.ok(box.y >= 0 && box.y < 600, `the match is on screen (y=${box.y})`);
  } finally {
    await c.stop();
  }
});

test("a match of the daemon's session/search is shown in its session, replayed: marked in its message and in view", async () => {
  const dir = pageWorkspace([
    text(`${Array.from({ length: 40 }, (_, i) => `Line ${i} about Freedonia.`).join("\n\n")}\n\nThe capital of Freedonia is Fredville.`),
    text("Something else entirely."),
  ]);
  const page = await openView();
  const c = await daemon(dir, null);
  try {
    const first = (await c.request("session/new")).sessionId;
    await c.prompt("tell me about freedonia", undefined, first);
    await c.request("waitForIdle", { sessionId: first });
    const second = (await c.request("session/new")).sessionId;
    await c.prompt("and now something else", undefined, second);
    await c.request("waitForIdle", { sessionId: second });
    const { matches } = await c.request("session/search", { query: "fredville" });
    assert.deepEqual(matches.map((m) => [m.sessionId, m.role]), [[first, "assistant"]]);
    // as History opens it: the session replayed into the page, then the match revealed
    const draw = poster(page);
    c.onEvent((id, event) => { if (id === first) draw({ type: "event", event }); });
    await c.load(first);
    await page.waitForFunction(() => document.body.innerText.includes("capital of Freedonia"));
    await draw.drained();
    await page.evaluate((m) => window.postMessage({ type: "reveal", query: "fredville", entryId: m.entryId }, "*"), matches[0]);
    const mark = page.locator(`.assistant[data-entry-id="${matches[0].entryId}"] mark.found`);
    await mark.waitFor();
    assert.equal(await mark.textContent(), "Fredville");
    const box = await mark.boundingBox();
    assert.ok(box.y >= 0 && box.y < 600, `the match is on screen (y=${box.y})`);
  } finally {
    await c.stop();
  }
});
