// Issue #39 (6): compaction shown in the chat, through the real daemon on a faux model's script: a
// line with a spinner while the older messages are summarised (and why), then a divider
// "Conversation compacted: ~1.3k → 20 tokens" whose summary unfolds; a refusal as a warning line
// with the daemon's reason; the divider again when the session is loaded and replayed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openView as openPage, pageDaemon as daemon, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { compactionSaid } = require("../dist/compactReply.js");

const held = useBrowser();
const workspace = (replies, options = {}) => pageWorkspace(replies, options, "pi-39c-");
// Only the daemon's summary requests carry this (its compaction prompt): the summary is the reply to them.
const SUMMARY_ASKED = "Write the summary in exactly this structure";
const summary = (t) => ({ ...text(t), when: SUMMARY_ASKED });
const question = (n, repeat = 40) => `question ${n}: ` + "what does the module do and why is it slow? ".repeat(repeat);
const SHORT_SUMMARY = "## Goal\nFind out why the module is slow.\n## Next Steps\nProfile `load_all`.";

// What the page drew as a compaction line at any moment (the spinner's line is gone once it ends).
const watchCompaction = (page) => page.evaluate(() => {
  window.compactionLines = [];
  new MutationObserver((changes) => changes.forEach((c) => c.addedNodes.forEach((n) => {
    if (n.classList?.contains("compaction"))
      window.compactionLines.push({ className: n.className, text: n.textContent, spinner: Boolean(n.querySelector(".spinner")) });
  }))).observe(document.getElementById("log"), { childList: true });
});
const seen = (page) => page.evaluate(() => window.compactionLines);
const k = (n) => n < 1000 ? String(n) : `${(n / 1000).toFixed(1).replace(/\.0$/, "")}k`; // 12.3k
const divider = (page) => page.locator("#log > details.compaction");

test("/compact: a spinner line says the older messages are being summarised as asked, then a divider with the tokens before and after whose summary unfolds; a replay draws it again", async (t) => {
  const dir = workspace([summary(SHORT_SUMMARY), text("first answer"), text("second answer")], { chunkSize: 8, delayMs: 30 });
  const page = await openPage(held.browser, 600);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await c.prompt(question(1, 80));
  await c.settled(undefined, 1);
  await c.prompt(question(2, 80));
  await c.settled(undefined, 2);
  await watchCompaction(page);

  const done = await c.prompt("/compact"); // as the chat sends what is typed
  const result = done.command.result;
  assert.ok(result.estimatedTokensAfter < result.tokensBefore);
  const line = divider(page);
  await line.waitFor();
  const running = (await seen(page)).find((l) => l.className.includes("running"));
  assert.ok(running?.spinner, "a line with a spinner while compacting");
  assert.equal(running.text, "Compacting the conversation: summarising the older messages (as you asked)…");

  const head = line.locator("summary");
  assert.equal(await head.innerText(), `Conversation compacted: ~${k(result.tokensBefore)} → ${k(result.estimatedTokensAfter)} tokens`);
  assert.match(await head.innerText(), /^Conversation compacted: ~1\.\dk → \d+ tokens/);
  assert.equal(await page.locator("#log .compaction.running").count(), 0, "the spinner's line is gone");
  assert.equal(await line.getAttribute("open"), null, "the summary is folded");
  assert.equal(await line.getByText("Profile").isVisible(), false);
  await head.click();
  await line.getByText("Find out why the module is slow.").waitFor({ state: "visible" });
  assert.equal(await line.locator("code").innerText(), "load_all", "the summary is Markdown");
  const order = await page.evaluate(() => [...document.querySelectorAll("#log > *")].map((n) => n.classList.contains("compaction") ? "compaction" : n.classList.contains("user") ? "user" : "assistant"));
  assert.deepEqual(order, ["user", "assistant", "user", "assistant", "compaction"], "where it happened: after the conversation it summarised");

  // the session loaded again: its context starts with the summary, drawn as the divider
  const { sessionId } = await c.request("getState");
  await page.evaluate(() => window.postMessage({ type: "reset" }, "*"));
  const replayed = c.events.length;
  await c.load(sessionId);
  await waitFor(() => c.events.slice(replayed).some((e) => e.event.type === "replay_end"), "the replay");
  await waitFor(async () => (await divider(page).count()) === 1, "the divider in the replay");
  assert.equal(await divider(page).locator("summary").innerText(), `Conversation compacted: ~${k(result.tokensBefore)} tokens summarised`);
  assert.equal(await divider(page).getAttribute("open"), null);
  await divider(page).locator("summary").click();
  await divider(page).getByText("Find out why the module is slow.").waitFor({ state: "visible" });
  await page.getByText("second answer").waitFor();
});

test("a threshold compaction before a request says the context was nearly full, and the answer follows the divider", async (t) => {
  // Questions and answers of ~2,000 tokens in a 14,500-token window: the threshold ((window + overhead) / 2, the
  // overhead being the system prompt and the tools' schemas) falls between the second and the third request
  // for any overhead of 1.5k–4k tokens, so more tools do not change where it compacts.
  const answer = (n) => text(`${n} answer: ` + "the build passes and the tests are green. ".repeat(190));
  const dir = workspace([summary(SHORT_SUMMARY), answer("first"), answer("second"), answer("third")],
                        { contextWindow: 14500, chunkSize: 800, delayMs: 30 });
  const page = await openPage(held.browser, 600);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await watchCompaction(page);
  for (let n = 1; n <= 3; n++) {
    await c.prompt(question(n, 180));
    await c.settled(undefined, n);
  }
  const ends = c.events.filter((e) => e.event.type === "compaction_end").map((e) => e.event);
  assert.equal(ends.length, 1, "one compaction");
  const [end] = ends;
  assert.equal(end.reason, "threshold", "the daemon compacted before the third request");
  await divider(page).waitFor();
  const running = (await seen(page)).find((l) => l.className.includes("running"));
  assert.ok(running?.spinner);
  assert.equal(running.text, "Compacting the conversation: summarising the older messages (the context was nearly full)…");
  const { tokensBefore, estimatedTokensAfter } = end.result;
  assert.ok(tokensBefore > 2000 && estimatedTokensAfter < tokensBefore);
  assert.equal(await divider(page).locator("summary").innerText(),
               `Conversation compacted: ~${k(tokensBefore)} → ${k(estimatedTokensAfter)} tokens`);
  await page.getByText("third answer:").waitFor();
  const after = await page.evaluate(() => {
    const d = document.querySelector("#log > details.compaction");
    return [...document.querySelectorAll("#log > .assistant")].map((a) => [a.textContent.split(":")[0], Boolean(d.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING)]);
  });
  assert.deepEqual(after, [["first answer", false], ["second answer", false], ["third answer", true]]);
});

test("a /compact with nothing to compact, and one whose summary would not make the context smaller, are warning lines with the daemon's reason", async (t) => {
  const long = "## Goal\n" + "- the user asked about topic and the details of it were discussed at length\n".repeat(400);
  const dir = workspace([summary(long), text("first answer"), text("second answer")], { chunkSize: 400 });
  const page = await openPage(held.browser, 600);
  const c = await daemon(dir, page);
  t.after(() => Promise.all([c.stop(), page.close()]));
  await assert.rejects(c.prompt("/compact"), (e) => e.code === -32003 && /nothing to compact/.test(e.message));
  const warnings = page.locator("#log > .compaction.warning");
  await waitFor(async () => (await warnings.count()) === 1, "the first warning");
  assert.equal(await warnings.first().innerText(), "⚠\nConversation not compacted: nothing to compact: the context is already small");

  await c.prompt(question(1));
  await c.settled(undefined, 1);
  await c.prompt(question(2));
  await c.settled(undefined, 2);
  let reply;
  await assert.rejects(c.prompt("/compact"), (e) => (reply = e).code === -32003 && /would not make the context smaller/.test(e.message));
  await waitFor(async () => (await warnings.count()) === 2, "the second warning");
  const said = await warnings.nth(1).innerText();
  assert.match(said, /^⚠\nConversation not compacted: the compaction would not make the context smaller: .*the context is unchanged$/s);
  const colour = await warnings.nth(1).evaluate((n) => getComputedStyle(n).color);
  const plain = await page.locator(".assistant").first().evaluate((n) => getComputedStyle(n).color);
  assert.notEqual(colour, plain, "a warning stands out");
  assert.equal(await page.locator("#log .compaction.running").count(), 0, "no spinner left");
  assert.equal(await divider(page).count(), 0);
  // the reply's error says what the chat's line says: the extension shows no toast and keeps "/compact" out of the input
  const events = c.events.map((e) => e.event);
  assert.equal(compactionSaid("/compact", reply, events), true);
  assert.equal(compactionSaid("hello", reply, events), false, "only for /compact");
  const busy = { code: -32003, message: "/compact needs an idle session: abort the run or wait for it" };
  assert.equal(compactionSaid("/compact", busy, events), false, "a failure the chat does not show is still shown");
});
