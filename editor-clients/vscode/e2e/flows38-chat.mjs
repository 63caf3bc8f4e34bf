// Issue #38's chat, driven as a user in a real VS Code (code-server, 1500×950) with the offline faux model:
// the chat alone in its side bar (Session Tree and Changes in the panel) saying what to do when empty, a long
// answer followed until the user scrolls up (then "Jump to latest"), Escape stopping a run and ↑ recalling the
// prompt, Ctrl+Alt+P adding the editor's selection to the chat, an edit's diff card in colour with Open diff and
// a toast naming the file relative to the workspace, a file name in an answer opening the file, the mode as a
// segmented control, a subagent's tokens and cost and its session opened as a chat, a retried request on one
// line, and the side bar's conversation back after a window reload. A screenshot after each step (prefix
// "chat38-").
//
// PI_E2E_BEFORE=1 with PI_E2E_VSIX=<an older .vsix> takes the same moments of that version (prefix "before-"),
// going on after a step fails (it is expected to).
//
//   node e2e/flows38-chat.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launch, daemonSettings, until, chatFrames as harnessFrames } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));
const before = process.env.PI_E2E_BEFORE === "1";

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const story = Array.from({ length: 80 }, (_, i) => `Paragraph ${i + 1} of the story, told slowly.`).join("\n\n");
const failure = { content: [], stopReason: "error", errorMessage: "503 the server is overloaded" };
const CORE = 'GREETING = "hello"\n\n\ndef greet(name):\n    return f"{GREETING}, {name}"\n';

const script = {
  modelId: "script", chunkSize: 3, delayMs: 20, cost: { input: 3, output: 15 },
  // each scenario is a session of its own, answered by the replies for its first message (`when`), so a step
  // that fails (an older version) leaves the next ones their own replies
  replies: [
    ...[text(story), text(Array.from({ length: 3000 }, (_, i) => `word${i}`).join(" "))].map((r) => ({ ...r, when: "long story" })),
    { ...text("It defines GREETING and greet(), which greets by name."), when: "what does this do" },
    ...[call("e1", "edit", { path: "core.py", edits: [{ oldText: '"hello"', newText: '"hi"' }] }),
        text("Changed in core.py (see core.py:5):\n\n```python\ndef greet(name):\n    # say hello\n    return f\"{GREETING}, {name}\" * 2\n```")]
      .map((r) => ({ ...r, when: "greeting shorter" })),
    ...[call("t1", "task", { prompt: "ALPHA count the notes", description: "count the notes" }),
        text("The subagent counted two notes.")].map((r) => ({ ...r, when: "delegate the counting" })),
    { ...text("There are two notes."), when: "ALPHA" }, // the subagent's
    ...Array(4).fill({ ...failure, when: "are you there" }),
    ...Array(6).fill({ echo: true }),
  ],
};

const kit = await launch({
  cache, out, prefix: before ? "before-" : "chat38-", viewport: { width: 1500, height: 950 },
  prepare: (_root, work) => writeFileSync(join(work, "core.py"), CORE),
  settings: (root) => {
    const daemon = daemonSettings(root, script);
    return { ...daemon, "pi.args": [...daemon["pi.args"], "--yes"], "files.autoSave": "off" };
  },
});
const { page, command, T } = kit;
const NEW = before ? 5000 : T; // what the older version lacks is not waited for long

// A step; in "before" mode a failed one is kept as its screenshot and the next goes on (a run it left going stopped).
async function run(name, fn) {
  await kit.run(name, fn);
  if (before && kit.failed) {
    kit.failed = false;
    await kit.shot(name);
    await page.keyboard.press("Escape");
    await command("pi: Stop").catch(() => undefined);
    await (await sidebar()).locator("#stop:disabled").waitFor({ timeout: T }).catch(() => undefined);
  }
}
async function newSession() {
  await command("pi: New Session");
  await (await sidebar()).locator(".m").first().waitFor({ state: "detached", timeout: T });
}

// The chat pages of a surface: the side bar's, the tabs'.
const chatFrames = (surface) => harnessFrames(page, surface);
const sidebar = () => until(async () => (await chatFrames("sidebar"))[0], "the side bar's chat");
async function sendIn(frame, words) {
  const input = frame.locator("#input");
  await input.click();
  await input.fill(words);
  await input.press("Enter");
}
const done = async (chat) => chat.locator("#stop:disabled").waitFor({ timeout: T });
const toast = (words) => page.locator(".notifications-toasts .notification-toast", { hasText: words });
const sidebarPanes = () => page.locator(".part.sidebar .pane-header").allInnerTexts();

try {
  await kit.open();

  await run("the chat has the whole side bar and says what to do when empty; Session Tree and Changes are in the panel", async () => {
    await page.locator(".activitybar .action-item a[aria-label^='pi']").first().click({ timeout: T });
    const chat = await sidebar();
    await chat.locator("#input").waitFor({ timeout: T });
    await page.locator(".statusbar-item", { hasText: "π faux/script" }).waitFor({ timeout: T });
    await chat.locator("#empty").waitFor({ timeout: NEW });
    assert.match(await chat.locator("#empty").innerText(), /Ask pi/);
    const panes = (await sidebarPanes()).join(" | ");
    assert.ok(!/Session Tree|Changes/.test(panes), `the side bar holds the chat only: ${panes}`);
    const height = await chat.evaluate(() => innerHeight);
    assert.ok(height > 750, `the chat is the side bar's full height (${height}px)`);
    await command("pi: Focus on Session Tree View"); // the Session Tree and Changes are in the panel
    const panel = (await page.locator(".part.panel .pane-header").allInnerTexts()).join(" | ");
    assert.ok(/Session Tree/i.test(panel) && /Changes/i.test(panel), `the panel holds the Session Tree and Changes: ${panel}`);
  });

  await run("a long answer: the input stays at the bottom, the view follows; scrolled up, Jump to latest shows", async () => {
    await command("View: Hide Panel");
    const chat = await sidebar();
    await sendIn(chat, "tell me a long story");
    await chat.locator(".assistant", { hasText: "Paragraph 45 of the story" }).waitFor({ timeout: T }); // more than the view holds
    const [barBottom, height] = await chat.evaluate(() => [document.getElementById("bar").getBoundingClientRect().bottom, innerHeight]);
    assert.ok(Math.abs(barBottom - height) < 2, `the input at the bottom (${barBottom} of ${height})`);
    await chat.evaluate(() => { document.getElementById("log").scrollTop = 0; });
    await chat.locator("#latest").waitFor({ state: "visible", timeout: NEW });
    await chat.locator(".assistant", { hasText: "Paragraph 65 of the story" }).waitFor({ timeout: T });
    assert.equal(await chat.evaluate(() => document.getElementById("log").scrollTop), 0, "the view stays where the user reads");
  });

  await run("Jump to latest follows again; Escape stops a run; ↑ recalls the prompt", async () => {
    const chat = await sidebar();
    await chat.locator("#latest").click({ timeout: NEW });
    await done(chat);
    await sendIn(chat, "now count to three thousand");
    await chat.locator(".assistant", { hasText: "word60" }).waitFor({ timeout: T });
    await chat.locator("#input").press("Escape");
    await chat.locator(".assistant .note", { hasText: "stopped" }).waitFor({ timeout: NEW });
    await done(chat);
    await chat.locator("#input").press("ArrowUp");
    assert.equal(await chat.locator("#input").inputValue(), "now count to three thousand");
    await chat.locator("#input").fill("");
  });

  await run("Ctrl+Alt+P with a selection adds it to the chat; the question goes with it", async () => {
    await newSession();
    const chat = await sidebar();
    await kit.openFile("core.py", "GREETING");
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Control+Alt+P");
    await chat.locator("#selections .chip", { hasText: "core.py:1-5" }).waitFor({ timeout: NEW });
    assert.equal(await chat.evaluate(() => document.activeElement?.id), "input", "the chat's input has the focus");
    await page.keyboard.type("what does this do?");
    await page.keyboard.press("Enter");
    const said = chat.locator(".user", { hasText: "what does this do?" });
    await said.locator("details.context summary", { hasText: "core.py" }).waitFor({ timeout: T });
    await chat.locator(".assistant", { hasText: "greets by name" }).waitFor({ timeout: T });
    await chat.locator("#selections .chip").waitFor({ state: "detached", timeout: T });
  });

  await run("an edit shows as a diff card in colour, Open diff opens the editor's diff, the toast names core.py; code in colour", async () => {
    await newSession();
    const chat = await sidebar();
    await sendIn(chat, "make the greeting shorter");
    const card = chat.locator(".diff-card", { hasText: "core.py" });
    await card.waitFor({ timeout: NEW });
    await card.locator(".hljs-addition", { hasText: '+GREETING = "hi"' }).waitFor({ timeout: T });
    await toast("pi changed core.py").waitFor({ timeout: T });
    assert.equal(await toast(kit.work).count(), 0, "the toast names the file relative to the workspace");
    await chat.locator(".assistant code.language-python .hljs-keyword", { hasText: "def" }).waitFor({ timeout: T });
    await done(chat);
    await card.locator("button.open-diff").click(); // the editor's diff: the file before the edit against it now
    await page.locator(".tabs-container .tab", { hasText: "core.py: pi's edit" }).waitFor({ timeout: T });
    const diff = page.locator(".monaco-diff-editor");
    await diff.locator(".editor.original .view-lines", { hasText: 'GREETING = "hello"' }).waitFor({ timeout: T });
    await diff.locator(".editor.modified .view-lines", { hasText: 'GREETING = "hi"' }).waitFor({ timeout: T });
  });

  await run("a file name in the answer opens the file in the editor, not a browser", async () => {
    const chat = await sidebar();
    const link = chat.locator(".assistant a.file", { hasText: "core.py:5" });
    await link.click({ timeout: NEW });
    await page.locator(".tabs-container .tab.active", { hasText: "core.py" }).waitFor({ timeout: T });
    await page.locator(".monaco-editor .cursor-line-number, .monaco-editor .active-line-number", { hasText: "5" }).first()
      .waitFor({ timeout: T }).catch(() => undefined); // the line is shown where the theme marks it
    assert.equal(page.context().pages().length, 1, "no browser tab opened");
    assert.equal(await chat.locator(".assistant a[href*='core.py']:not(.file)").count(), 0, "no http://core.py link");
  });

  await run("the mode is a segmented control: plan, ask, auto-edit", async () => {
    const chat = await sidebar();
    await chat.locator("#mode [data-mode=plan]").click({ timeout: NEW });
    await page.locator(".statusbar-item", { hasText: "plan" }).waitFor({ timeout: T });
    await chat.locator("#mode [data-mode=plan][aria-checked=true]").waitFor({ timeout: T });
    await chat.locator("#mode [data-mode=ask]").click();
    await page.locator(".statusbar-item", { hasText: "ask" }).waitFor({ timeout: T });
    await chat.locator("#mode [data-mode=plan]").click(); // left in plan mode for the screenshot
    await page.locator(".statusbar-item", { hasText: "plan" }).waitFor({ timeout: T });
  });

  await run("a subagent shows the tokens and cost it used; Open shows its session as a chat", async () => {
    await newSession();
    const chat = await sidebar();
    await chat.locator("#mode [data-mode=ask]").click({ timeout: NEW }).catch(() => command("pi: Select Mode").then(() => kit.pick("ask")));
    await page.locator(".statusbar-item", { hasText: "ask" }).waitFor({ timeout: T });
    await sendIn(chat, "delegate the counting");
    await chat.locator(".assistant", { hasText: "The subagent counted two notes." }).waitFor({ timeout: T });
    const sub = chat.locator(".subagent", { hasText: "count the notes" });
    await sub.locator(".sub-usage", { hasText: /^[\d,]+ tokens · \$0\.\d{4}$/ }).waitFor({ timeout: NEW });
    await sub.locator("button.sub-open").click();
    const tab = await until(async () => {
      for (const frame of await chatFrames("tab"))
        if (await frame.locator(".assistant", { hasText: "There are two notes." }).count()) return frame;
    }, "the subagent's chat tab", NEW);
    await tab.locator(".user", { hasText: "ALPHA count the notes" }).waitFor({ timeout: T });
    await page.locator(".tabs-container .tab", { hasText: "subagent: count the notes" }).waitFor({ timeout: T });
  });

  await run("a failing request says 'retrying 1 of 3 in 2 s' and ends on one line", async () => {
    await newSession();
    const chat = await sidebar();
    await sendIn(chat, "are you there?");
    await chat.locator(".retry", { hasText: /retrying 1 of 3 in \d s/ }).waitFor({ timeout: NEW });
    await done(chat);
    await chat.locator(".error", { hasText: "503 the server is overloaded (4 attempts)" }).waitFor({ timeout: NEW });
    assert.equal(await chat.locator(".error").count(), 1, "one line, not one per attempt");
    assert.equal(await chat.locator(".retry").count(), 0);
  });

  await run("after a window reload the side bar's chat comes back with its conversation", async () => {
    await page.reload();
    await page.waitForSelector(".monaco-workbench", { timeout: T });
    const chat = await sidebar();
    await chat.locator(".user", { hasText: "are you there?" }).waitFor({ timeout: NEW });
    await chat.locator(".error", { hasText: "503 the server is overloaded (4 attempts)" }).waitFor({ timeout: T });
    await page.locator(".tabs-container .tab", { hasText: "subagent: count the notes" }).waitFor({ timeout: T });
  });
} catch (error) {
  await kit.fail(error);
} finally {
  const ok = await kit.close();
  process.exit(ok || before ? 0 : 1);
}
