// Issue #28 in the chat view and the extension's decisions, against the real daemon: the chat's page in
// headless Chromium fed the events as the extension forwards them (a subagent's routed by its session id),
// the rewind's target and confirmation, plan mode's offer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { createRequire } from "node:module";
import { openView as openPage, pageDaemon as daemon, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { storedSubagents } = require("../dist/subagents.js");
const { rewindTarget, rewindPrompt, rewindReport } = require("../dist/rewind.js");
const { modeStatus } = require("../dist/modes.js");

const held = useBrowser();

const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });

const workspace = (replies, options = {}) => pageWorkspace(replies, options, "pi-28-");

const openView = () => openPage(held.browser, 700);

test("a subagent's events draw nested in its task call; Stop aborts that child only", async (t) => {
  const long = Array.from({ length: 4000 }, (_, i) => `word${i}`).join(" "); // still streaming when stopped
  const dir = workspace([
    call("t1", "task", { prompt: "ALPHA read the notes", description: "reading" }),
    { ...call("c1", "read", { path: "notes.txt" }), when: "ALPHA" }, { ...text("The notes say a and b."), when: "ALPHA" },
    call("t2", "task", { prompt: "BETA talk at length", description: "talking" }),
    { ...text(long), when: "BETA" },
    text("all done"),
  ], { chunkSize: 2, delayMs: 5 });
  writeFileSync(join(dir, "notes.txt"), "a\nb\n");
  const page = await openView();
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  const { sessionId } = await c.request("session/new");
  await c.prompt("go");
  // the second task streams; its Stop ends it alone
  await page.waitForSelector("details.tool[data-id=t2] .subagent.running .sub-body .assistant");
  const first = "details.tool[data-id=t1] .subagent";
  assert.equal(await page.textContent(`${first} .sub-status`), "completed");
  assert.equal(await page.locator(`${first} .sub-body .assistant`).count(), 2);
  assert.equal(await page.locator(`${first} .sub-body details.tool.running`).count(), 0);
  assert.match(await page.textContent(`${first} .sub-body details.tool[data-id=c1] summary`), /^read notes\.txt$/);
  assert.match(await page.textContent(`${first} .sub-body`), /The notes say a and b\./);
  assert.equal(await page.locator(`${first} .sub-stop`).count(), 0);
  assert.equal((await page.textContent("details.tool[data-id=t1] > .output")).trim(), "The notes say a and b.");
  assert.match(await page.textContent(`${first} details.tool[data-id=c1] > .output`), /^\s*1\ta\n/); // its own output
  await page.click("details.tool[data-id=t2] .sub-stop");
  const stop = (await page.evaluate(() => window.posted)).find((m) => m.type === "abortSubagent");
  const child = [...c.router.children.values()].find((k) => k.toolCallId === "t2");
  assert.equal(stop.sessionId, child.sessionId);
  await c.abort(stop.sessionId);
  await c.settled(sessionId);
  // the page draws streamed Markdown on its next frame: wait for what is drawn, not a count at one moment
  await waitFor(async () => (await page.textContent("details.tool[data-id=t2] .sub-status")) === "aborted", "the child shown aborted");
  assert.match(await page.textContent("details.tool[data-id=t2] > .output"), /aborted/);
  await page.locator(".m.assistant", { hasText: "all done" }).waitFor({ timeout: 20000 }); // the parent went on
  // nothing of the children leaked into the session's own messages
  assert.equal(await page.locator("#log > .m.user").count(), 1);
  // a resumed session knows its children from the file
  const { entries } = await c.request("session/entries", { scope: "file" });
  assert.deepEqual(storedSubagents(entries).map((s) => [s.toolCallId, s.status]), [["t1", "completed"], ["t2", "aborted"]]);
});

test("Rewind to here on a user message: before it, its text back; the dry run's files in the confirmation", async (t) => {
  const dir = workspace([
    call("w1", "write", { path: "a.txt", content: "first\n" }), text("wrote it"),
    call("w2", "write", { path: "a.txt", content: "second\n" }), text("wrote it again"),
  ]);
  const page = await openView();
  const c = await daemon(dir, page, ["--yes"]);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.request("session/new");
  await c.prompt("make a");
  await c.settled(undefined, 1);
  await c.prompt("change a\n\n[editor context]\nREADME.md:\n# x"); // the context the daemon renders is not put back
  await c.settled(undefined, 2);
  // the chat: each stored user message has its button, which posts its entry and what the user typed
  await page.waitForFunction(() => document.querySelectorAll(".user button.rewind").length === 2);
  await page.hover(".user >> nth=1");
  await page.click(".user >> nth=1 >> button.rewind");
  const asked = (await page.evaluate(() => window.posted)).find((m) => m.type === "rewind");
  assert.equal(asked.text, "change a");
  const { entries } = await c.request("session/entries", { scope: "file" });
  const target = rewindTarget(entries, asked.entryId);
  const second = entries.find((e) => e.id === asked.entryId);
  assert.deepEqual(target, { entryId: second.parentId, text: "change a" });
  const plan = await c.request("session/rewind", { entryId: target.entryId, dryRun: true });
  const prompt = rewindPrompt(plan, target.text);
  assert.match(prompt.detail, /^"change a" and everything after it leaves the conversation/);
  assert.match(prompt.detail, /Files taken back \(1\):\n• a\.txt \(restored\)/);
  assert.deepEqual(prompt.choices.map((x) => [x.label, x.files]),
                   [["Rewind conversation and files", "revert"], ["Rewind conversation only", "keep"]]);
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "second\n", "a dry run changes nothing");
  const done = await c.request("session/rewind", { entryId: target.entryId, files: "revert" });
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "first\n");
  assert.equal(rewindReport(done), undefined);
  // another entry (not a user message) becomes the leaf itself; a conflict is reported
  const assistant = entries.find((e) => e.type === "message" && e.message.role === "assistant");
  assert.deepEqual(rewindTarget(entries, assistant.id), { entryId: assistant.id });
  writeFileSync(join(dir, "a.txt"), "someone else's\n");
  const first = entries.find((e) => e.type === "message" && e.message.role === "user");
  const report = rewindReport(await c.request("session/rewind", { entryId: first.parentId }));
  assert.equal(report, "pi: rewound, but this file was changed since and left alone: a.txt");
  assert.equal(readFileSync(join(dir, "a.txt"), "utf8"), "someone else's\n");
  assert.equal(rewindPrompt({ files: [], conflicts: [] }).choices.length, 1);
});

test("the mode selector follows mode_changed; after a plan-mode run the chat offers to execute the plan", async (t) => {
  const dir = workspace([call("p", "write", { path: "p.txt", content: "x" }), text("1. write p.txt")]);
  const page = await openView();
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.request("session/new");
  assert.equal(await page.getAttribute("#mode [aria-checked=true]", "data-mode"), "ask");
  await c.request("setMode", { mode: "auto-edit" }); // changed elsewhere (/mode): mode_changed shows it
  await page.waitForFunction(() => document.querySelector("#mode [aria-checked=true]").dataset.mode === "auto-edit");
  await page.click("#mode [data-mode=plan]"); // the user picks it: the extension calls setMode
  const picked = (await page.evaluate(() => window.posted)).find((m) => m.type === "setMode");
  assert.equal(picked.mode, "plan");
  await c.request("setMode", { mode: picked.mode });
  await page.waitForFunction(() => document.body.dataset.mode === "plan");
  await c.prompt("plan it");
  await c.settled();
  assert.equal(await page.locator("details.tool.failed").count(), 1); // the write was refused
  assert.deepEqual(await page.locator(".plan-actions button").allTextContents(), ["Execute the plan", "Execute with auto-edit"]);
  await page.click(".plan-actions button >> nth=1");
  assert.deepEqual((await page.evaluate(() => window.posted)).filter((m) => m.type === "executePlan"), [{ type: "executePlan", mode: "auto-edit" }]);
  assert.equal(await page.locator(".plan-actions").count(), 0);
  assert.deepEqual(modeStatus("plan").text, "$(checklist) plan");
});
