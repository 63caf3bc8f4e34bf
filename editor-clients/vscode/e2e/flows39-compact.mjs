// Issue #39 (6): compaction in the side bar's chat of a real VS Code (code-server) with the offline faux
// model: `/compact` typed after two long questions shows a spinner line "Compacting the conversation…
// (as you asked)", then the divider "Conversation compacted: ~N → M tokens" whose summary unfolds; a second
// `/compact` right after, with nothing older left to summarise, is a warning line with the daemon's reason
// (not a toast as well);
// after a window reload the replayed conversation starts with the divider. Screenshots prefixed "compact39-".
//
//   node e2e/flows39-compact.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { launch, daemonSettings } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));

const text = (t) => ({ content: [{ type: "text", text: t }] });
const SUMMARY_ASKED = "Write the summary in exactly this structure"; // only the daemon's summary requests say it
const question = (n) => `Question ${n}: ` + "why is the importer slow on large CSV files, and what would you change? ".repeat(16);
const summary = "## Goal\nMake the CSV importer fast on large files.\n## Progress\n### Done\n- Found that `parse_row` "
  + "re-reads the header for every row.\n## Next Steps\n- Cache the header in `Importer.__init__`.\n- Profile `load_all` again.";
const script = {
  modelId: "script", chunkSize: 3, delayMs: 25,
  replies: [
    { ...text(summary), when: SUMMARY_ASKED },
    text("`parse_row` re-reads the header for every row."),
    text("Cache the header once in `Importer.__init__`."),
  ],
};

const kit = await launch({ cache, out, prefix: "compact39-", viewport: { width: 1400, height: 900 },
                           settings: (root) => daemonSettings(root, script) });
const { page, chat, send, T } = kit;
const done = () => chat().locator("#stop:disabled").waitFor({ timeout: T });
// "/compact" as a user types it: Enter takes the completion offered, the next Enter sends it.
async function compact() {
  await send("/compact");
  await chat().locator("#input").press("Enter");
}
// The end of the conversation in view (the chat follows it unless the user scrolled up).
async function latest() {
  const jump = chat().locator("#latest");
  if (await jump.isVisible()) await jump.click();
}

try {
  await kit.open();
  await kit.openChat("faux/script");

  await run("two long questions answered", async () => {
    await send(question(1));
    await chat().locator(".assistant", { hasText: "re-reads the header" }).waitFor({ timeout: T });
    await done();
    await send(question(2));
    await chat().locator(".assistant", { hasText: "Cache the header once" }).waitFor({ timeout: T });
    await done();
  });

  await run("/compact: a spinner line says the older messages are being summarised, as asked", async () => {
    await compact();
    const line = chat().locator(".compaction.running");
    await line.waitFor({ timeout: T });
    await latest();
    assert.equal(await line.innerText(), "Compacting the conversation: summarising the older messages (as you asked)…");
  });

  await run("then a divider with the tokens before and after; the summary is folded", async () => {
    const divider = chat().locator("details.compaction");
    await divider.waitFor({ timeout: T });
    assert.match(await divider.locator("summary").innerText(), /^Conversation compacted: ~\d+(\.\d)?k? → \d+(\.\d)?k? tokens$/);
    assert.equal(await divider.getAttribute("open"), null);
    await latest();
  });

  await run("a click unfolds the summary", async () => {
    await chat().locator("details.compaction summary").click();
    await chat().locator("details.compaction", { hasText: "Cache the header in" }).waitFor({ timeout: T });
    await latest();
  });

  await run("a second /compact, with nothing older left to summarise, is a warning line with the daemon's reason", async () => {
    await compact();
    const warning = chat().locator(".compaction.warning");
    await warning.waitFor({ timeout: T });
    assert.match(await warning.innerText(), /^⚠\s*Conversation not compacted: nothing to compact: the context is already small$/);
    // said once, in the chat: no toast repeating it, and "/compact" is not put back into the input
    assert.equal(await page.locator(".notifications-toasts .notification-toast", { hasText: "compact" }).count(), 0);
    assert.equal(await chat().locator("#input").inputValue(), "");
    await latest();
  });

  await run("after a window reload the replayed conversation starts with the divider", async () => {
    await page.reload();
    await page.waitForSelector(".monaco-workbench", { timeout: T });
    // the window comes back with the side bar as it was, the chat shown; π (which would hide it) only when not
    const shown = await chat().locator("#input").waitFor({ timeout: 20_000 }).then(() => true, () => false);
    if (!shown) await kit.openChat();
    const divider = chat().locator("details.compaction");
    await divider.waitFor({ timeout: T });
    assert.match(await divider.locator("summary").innerText(), /^Conversation compacted: ~\d+(\.\d)?k? tokens summarised$/);
    await chat().locator("#log").evaluate((log) => { log.scrollTop = 0; }); // the user scrolls up to it
    await divider.locator("summary").click();
    await chat().locator("details.compaction", { hasText: "Cache the header in" }).waitFor({ timeout: T });
  });
} catch (error) {
  await kit.fail(error);
} finally {
  const ok = await kit.close();
  process.exit(ok ? 0 : 1);
}

async function run(name, fn) {
  await kit.run(name, fn);
}
