// Issue #38's chat page in a real browser (the system's Chromium, headless), fed with the real daemon's
// events as the extension forwards them: the input pinned below the conversation, following the answer
// unless scrolled up (then "Jump to latest"), an empty chat that says what to do, Escape and ↑, code and
// diffs coloured by highlight.js, the mode as a segmented control, the workspace's file names as links
// (and never http://core.py), what each subagent used, and retries on one line.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { openView as openPage, pageDaemon as daemon, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { storedSubagents } = require("../dist/subagents.js");

const held = useBrowser();
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const workspace = (replies, options = {}) => pageWorkspace(replies, options, "pi-38-");
const posted = (page, type) => page.evaluate((t) => window.posted.filter((m) => m.type === t), type);

const scrollState = (page) => page.evaluate(() => {
  const log = document.getElementById("log");
  return { top: log.scrollTop, atBottom: log.scrollTop + log.clientHeight >= log.scrollHeight - 24,
           latest: getComputedStyle(document.getElementById("latest")).display !== "none" };
});

test("the input stays at the bottom; the view follows the answer, not once scrolled up, and Jump to latest brings it back; an empty chat says what to do", async (t) => {
  const long = Array.from({ length: 90 }, (_, i) => `Paragraph ${i} of the answer.`).join("\n\n");
  const dir = workspace([text(long)], { chunkSize: 6, delayMs: 8 });
  const page = await openPage(held.browser, 500);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  const empty = page.locator("#empty");
  assert.ok(await empty.isVisible(), "an empty chat shows what to do");
  assert.match(await empty.innerText(), /Ask pi/);
  assert.match(await empty.innerText(), /@.*adds a file/);
  const barBottom = () => page.evaluate(() => document.getElementById("bar").getBoundingClientRect().bottom);
  assert.equal(Math.round(await barBottom()), 500, "the input is at the bottom of the view");

  await c.prompt("write a lot");
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 15"));
  assert.equal(await empty.isVisible(), false, "the help goes with the first message");
  assert.equal(Math.round(await barBottom()), 500, "the input stays at the bottom under a long answer");
  await waitFor(async () => (await scrollState(page)).atBottom, "the view following the answer");

  await page.evaluate(() => { document.getElementById("log").scrollTop = 0; }); // the user scrolls up to read
  await waitFor(async () => (await scrollState(page)).latest, "Jump to latest shown");
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 50"));
  assert.equal((await scrollState(page)).top, 0, "the view stays where the user is reading");

  await page.click("#latest");
  await waitFor(async () => { const s = await scrollState(page); return s.atBottom && !s.latest; }, "at the end again");
  await c.settled();
  await page.waitForFunction(() => document.body.innerText.includes("Paragraph 89"));
  await waitFor(async () => (await scrollState(page)).atBottom, "following to the end of the answer");
  assert.equal((await scrollState(page)).latest, false);
});

test("Escape stops a run; ↑ in the empty input recalls the prompts sent, ↓ goes back", async (t) => {
  const long = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" ");
  const dir = workspace([text("first answer"), text(long)], { chunkSize: 4, delayMs: 5 });
  const page = await openPage(held.browser, 500);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  const sendFromPage = async (words) => {
    await page.fill("#input", words);
    await page.press("#input", "Enter");
    const sent = (await posted(page, "send")).at(-1);
    assert.equal(sent.text, words);
    return c.prompt(sent.text); // as the extension does
  };
  await sendFromPage("the first question");
  await c.settled(undefined, 1);
  await page.press("#input", "Escape"); // idle: nothing to stop
  assert.equal((await posted(page, "abort")).length, 0);
  await sendFromPage("tell me everything");
  await page.waitForFunction(() => document.body.innerText.includes("word40"));
  await page.waitForSelector("#stop:not(:disabled)");
  await page.press("#input", "Escape");
  await waitFor(async () => (await posted(page, "abort")).length === 1, "the page asking to stop");
  await c.abort(); // as the extension does
  await c.settled(undefined, 2);
  await page.locator(".assistant .note", { hasText: "stopped" }).waitFor();

  assert.equal(await page.inputValue("#input"), "");
  await page.press("#input", "ArrowUp");
  assert.equal(await page.inputValue("#input"), "tell me everything");
  await page.press("#input", "ArrowUp");
  assert.equal(await page.inputValue("#input"), "the first question");
  await page.press("#input", "ArrowDown");
  assert.equal(await page.inputValue("#input"), "tell me everything");
  await page.press("#input", "ArrowDown");
  assert.equal(await page.inputValue("#input"), "", "past the last one: empty again");
  await page.fill("#input", "a draft");
  await page.press("#input", "ArrowUp");
  assert.equal(await page.inputValue("#input"), "a draft", "a draft is never replaced");
});

test("code and an edit's diff are coloured by highlight.js; Open diff posts the change (the text before is taken back); the mode is a segmented control", async (t) => {
  const code = "```typescript\nfunction double(n: number): number {\n  return n * 2; // twice\n}\n```";
  const dir = workspace([call("e1", "edit", { path: "core.py", edits: [{ oldText: "x = 1\n", newText: "x = 2\n" }] }),
                         text(`Done:\n\n${code}`)]);
  writeFileSync(join(dir, "core.py"), "import os\nx = 1\n");
  const page = await openPage(held.browser, 700);
  const c = await daemon(dir, page, ["--yes"]);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.prompt("change x");
  await c.settled();
  const card = page.locator(".diff-card");
  await card.waitFor();
  assert.equal(await card.locator(".diff-path").textContent(), "core.py");
  assert.equal(await card.locator(".added").textContent(), "+1");
  assert.equal(await card.locator(".removed").textContent(), "−1");
  const added = card.locator(".hljs-addition");
  const removed = card.locator(".hljs-deletion");
  assert.equal(await added.textContent(), "+x = 2");
  assert.equal(await removed.textContent(), "-x = 1");
  const colour = (l) => l.evaluate((n) => getComputedStyle(n).color);
  assert.notEqual(await colour(added), await colour(removed), "added and removed lines in their own colours");
  await card.locator("button.open-diff").click();
  const [asked] = await posted(page, "diff");
  assert.equal(asked.toolCallId, "e1");
  assert.match(asked.diff, /-x = 1\n\+x = 2/);
  // the extension opens it as the editor's diff: the text before, taken back from the file now
  const { diffPath, textBefore } = require("../dist/editDiff.js");
  assert.equal(diffPath(asked.diff), "core.py", "the diff posted names its file");
  assert.equal(textBefore(readFileSync(join(dir, "core.py"), "utf8"), asked.diff), "import os\nx = 1\n");
  assert.equal(textBefore("import os\nx = 3\n", asked.diff), undefined, "changed since: no guess");

  const fn = page.locator(".assistant code.language-typescript .hljs-title.function_");
  await fn.waitFor();
  assert.equal(await fn.textContent(), "double", "a grammar, not a keyword list: the function's name is known");
  assert.equal(await page.locator(".assistant code .hljs-comment").textContent(), "// twice");

  assert.equal(await page.locator("select").count(), 0, "no raw <select>");
  const modes = page.locator("#mode[role=radiogroup] button[role=radio]");
  assert.deepEqual(await modes.allTextContents(), ["plan", "ask", "auto-edit"]);
  assert.equal(await page.getAttribute("#mode [aria-checked=true]", "data-mode"), "ask");
  const [checked, other] = await page.evaluate(() => [...document.querySelectorAll("#mode button")].map((b) => getComputedStyle(b).backgroundColor).slice(1, 3));
  assert.notEqual(checked, other, "the current mode stands out");
  await page.click("#mode [data-mode=plan]");
  assert.deepEqual((await posted(page, "setMode")).map((m) => m.mode), ["plan"]);
});

test("file names in an answer that are the workspace's files open them; nothing becomes http://core.py", async (t) => {
  const answer = "Look at core.py (see core.py:2) and `util.py`; docs at https://example.com, not example.com or missing.py.";
  const dir = workspace([text(answer)]);
  const page = await openPage(held.browser, 500);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.prompt("where is it?");
  await c.settled();
  await waitFor(async () => (await posted(page, "files")).length, "the page asking for the workspace's files");
  await page.evaluate(() => window.postMessage({ type: "files", files: ["core.py", "pkg/util.py", "script.json"] }, "*"));
  const links = page.locator(".assistant a.file");
  await waitFor(async () => (await links.count()) === 3, "three file links");
  assert.deepEqual(await links.evaluateAll((as) => as.map((a) => [a.textContent, a.dataset.path, a.dataset.line ?? null])),
                   [["core.py", "core.py", null], ["core.py:2", "core.py", "2"], ["util.py", "pkg/util.py", null]]);
  assert.equal(await page.locator(".assistant a[href*='core.py']:not(.file)").count(), 0, "no web link to core.py");
  assert.deepEqual(await page.locator(".assistant a:not(.file)").evaluateAll((as) => as.map((a) => a.getAttribute("href"))),
                   ["https://example.com"], "only the real URL is a web link");
  await links.nth(1).click();
  assert.deepEqual((await posted(page, "openFile")).map(({ path, line }) => [path, line]), [["core.py", 2]]);
  // the checks behind it: a name of one file only, and never outside the folder
  const { fileFor } = require("../dist/fileLinks.js");
  const { insideFolder } = require("../dist/folderPath.js");
  assert.equal(fileFor(["a/x.py", "b/x.py"], "x.py"), undefined, "two files of that name: no guess");
  assert.equal(insideFolder("/w", "../etc/passwd"), undefined);
  assert.equal(insideFolder("/w", "/etc/passwd"), undefined);
  assert.equal(insideFolder("/w", "src/../core.py"), "/w/core.py");
});

test("each subagent shows the tokens and cost it used, live and in a resumed session; Open asks for it as a chat", async (t) => {
  const dir = workspace([
    call("t1", "task", { prompt: "ALPHA count the notes", description: "counting" }),
    { ...text("There are two notes."), when: "ALPHA" },
    text("all done"),
  ], { cost: { input: 3, output: 15 } });
  mkdirSync(join(dir, "notes"));
  const page = await openPage(held.browser, 700);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.prompt("delegate");
  await c.settled();
  const end = c.events.find((e) => e.event.type === "subagent_end").event;
  assert.ok(end.usage.totalTokens > 0);
  const expected = `${end.usage.totalTokens.toLocaleString("en-US")} tokens · $${(end.cost ?? end.usage.cost.total).toFixed(4)}`;
  const usage = page.locator("details.tool[data-id=t1] .sub-usage");
  await waitFor(async () => (await usage.textContent()) === expected, `the child's usage "${expected}"`);
  assert.notEqual(expected.split("$")[1], "0.0000", "the cost is counted");
  await page.click("details.tool[data-id=t1] .sub-open");
  const [open] = await posted(page, "openSubagent");
  assert.equal(open.sessionId, end.sessionId);
  assert.equal(open.title, "subagent: counting");

  // a resumed session (replayed, then its stored subagents, as the extension draws it): the entries carry the usage
  const { entries, sessionId } = await c.request("session/entries", { scope: "file" });
  const stored = storedSubagents(entries);
  await page.evaluate(() => window.postMessage({ type: "reset" }, "*"));
  await c.load(sessionId ?? (await c.request("getState")).sessionId);
  await waitFor(() => c.events.some((e) => e.event.type === "replay_end"), "the replay");
  await page.locator("details.tool[data-id=t1]").waitFor();
  await page.evaluate((items) => window.postMessage({ type: "events", events: items.map((s) => ({ type: "subagent_start", ...s })) }, "*"), stored);
  await waitFor(async () => (await page.locator(".sub-usage").textContent().catch(() => "")) === expected, "the stored child's usage");
});

test("a request retried ends in one line with its attempts, after saying 'retrying 1 of 2 in N s'", async (t) => {
  const failure = { content: [], stopReason: "error", errorMessage: "503 the server is overloaded" };
  const dir = workspace([failure, failure, failure]);
  const page = await openPage(held.browser, 500);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.request("setAutoRetry", { enabled: true, maxAttempts: 2, baseDelayMs: 1500 });
  await c.prompt("hello");
  const retry = page.locator(".retry");
  await waitFor(async () => /^retrying 1 of 2 in \d s…$/.test(await retry.textContent().catch(() => "")), "retrying 1 of 2");
  await waitFor(async () => /^retrying 2 of 2 (in \d s|now)…$/.test(await retry.textContent().catch(() => "")), "retrying 2 of 2");
  await c.settled();
  await waitFor(async () => (await page.locator(".error").count()) === 1 && (await retry.count()) === 0, "one error line");
  assert.equal(await page.locator(".error").innerText(), "503 the server is overloaded (3 attempts)");
  assert.equal(await page.locator(".m.assistant").count(), 1);
});
