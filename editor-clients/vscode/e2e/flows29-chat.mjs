// Issue #29's chat, driven as a user in a real VS Code (code-server) with the offline faux model: the side bar's
// chat moved into an editor tab with one click, code in syntax colours, New on the tab's title bar, two chats in
// two tabs streaming at once each on its own session, an image pasted into the input and sent (stored with the
// prompt, drawn as a thumbnail), and History searching the text of all sessions and opening one at the match.
// A screenshot after each step (prefix "chat-") in the output folder.
//
//   node e2e/flows29-chat.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launch, daemonSettings, daemonPids, until, chatFrames as harnessFrames } from "./harness.mjs";

// The chat's own actions are in its view's header (the side bar holds the Background Processes view too),
// shown while the pointer is over that header, as for a user.
async function chatActions(page) {
  await page.locator(".part.sidebar .pane-header", { hasText: /^\s*chat/i }).first().hover();
}

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));

const text = (t) => ({ content: [{ type: "text", text: t }] });
const when = (marker, reply) => ({ ...reply, when: marker }); // the reply for the chat whose first prompt has the marker
const lines = (word, n) => Array.from({ length: n }, (_, i) => `${word} line ${i + 1} of the story.`).join("\n\n");
const CODE = "Here it is:\n\n```python\ndef greet(name):\n    # say hello\n    return \"hello \" + name * 2\n```\n";
// A 24×16 PNG, red on the left, blue on the right.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAH0lEQVR42mO4oKBAECk4XCCIGEYNGjVo1KBRgygzCAAOOLAQB3488AAAAABJRU5ErkJggg==";

const script = {
  modelId: "script", chunkSize: 3, delayMs: 20,
  replies: [
    when("greet in Python", text(CODE)),
    when("beta story", text(lines("Beta", 60))),
    when("about Freedonia", text(`${lines("Freedonia", 30)}\n\nIts capital is Fredville, by the sea.`)),
    // the prompts that are not their chat's first, in the order they are sent
    text(lines("Alpha", 60)),
    text("I see a small red square."),
  ],
};

const kit = await launch({ cache, out, prefix: "chat-", settings: (root) => daemonSettings(root, script) });
const { page, run, command, pick, work, T } = kit;

// The chat pages: the side bar's and each tab's (its <body data-surface>), found among the page's frames.
const chatFrames = (surface) => harnessFrames(page, surface);
const sidebar = () => until(async () => (await chatFrames("sidebar"))[0], "the side bar's chat");
// The tab whose chat shows `words`.
const tabWith = (words) => until(async () => {
  for (const frame of await chatFrames("tab"))
    if (await frame.evaluate((w) => document.getElementById("log").innerText.includes(w), words).catch(() => false)) return frame;
}, `a chat tab showing "${words}"`);
async function sendIn(frame, words) {
  const input = frame.locator("#input");
  await input.click();
  await input.fill(words);
  await input.press("Enter");
}
const sessionOf = (frame) => frame.evaluate(() => document.body.dataset.sessionId);
const tabTitled = (title) => page.locator(".tabs-container .tab", { hasText: title });
const titleAction = (label) => page.locator(`.editor-group-container.active .editor-actions .action-label[aria-label^='${label}']`).first();

let tabA;
let tabB;
try {
  await kit.open();

  await run("the side bar's chat answers with code in syntax colours", async () => {
    await page.locator(".activitybar .action-item a[aria-label^='pi']").first().click({ timeout: T });
    const chat = await sidebar();
    await chat.locator("body[data-mode]").waitFor({ timeout: T }); // the page's script runs and has its mode
    await page.locator(".statusbar-item", { hasText: "π faux/script" }).waitFor({ timeout: T });
    await sendIn(chat, "greet in Python");
    await chat.locator(".assistant code.language-python .hljs-keyword", { hasText: "return" }).waitFor({ timeout: T });
    await chat.locator("#stop:disabled").waitFor({ timeout: T }); // the answer is complete: no redraw under the checks
    const colour = (cls) => chat.locator(`.assistant code .${cls}`).first().evaluate((n) => getComputedStyle(n).color);
    const plain = await chat.locator(".assistant code").first().evaluate((n) => getComputedStyle(n).color);
    const colours = new Set([await colour("hljs-keyword"), await colour("hljs-string"), await colour("hljs-comment"), await colour("hljs-number"), plain]);
    assert.equal(colours.size, 5, `keywords, strings, comments, numbers and the rest each their own colour: ${[...colours]}`);
  });

  await run("one click on the chat's title bar opens it in a full-height editor tab", async () => {
    await chatActions(page);
    await page.locator(".part.sidebar .pane-header .action-label[aria-label='pi: Open Chat in Editor']").click({ timeout: T });
    tabA = await tabWith("greet in Python");
    await tabA.locator(".assistant code .hljs-keyword", { hasText: "def" }).waitFor({ timeout: T });
    await tabTitled("greet in Python").waitFor({ timeout: T });
    const box = await page.locator(".editor-group-container.active").boundingBox();
    assert.ok(box.height > 700, `the tab is the editor's full height (${box.height}px)`);
    assert.equal(await (await sidebar()).locator(".user", { hasText: "greet in Python" }).count(), 1, "the side bar's chat stays");
  });

  await run("New on the tab's title bar opens a second chat tab on a new session", async () => {
    await titleAction("pi: New Chat Tab").click({ timeout: T });
    await tabTitled("new chat").waitFor({ timeout: T });
    await command("View: Move Editor into Right Group");
    tabB = await until(async () => {
      for (const frame of await chatFrames("tab")) if (frame !== tabA && await sessionOf(frame).catch(() => "")) return frame;
    }, "the new tab's chat");
    assert.notEqual(await sessionOf(tabB), await sessionOf(tabA), "each tab its own session");
  });

  await run("two chats stream at once, each in its own tab, titled by their first message", async () => {
    await sendIn(tabA, "alpha story");
    await sendIn(tabB, "beta story");
    await until(async () => (await tabA.locator(".assistant", { hasText: "Alpha line 3" }).count())
      && (await tabB.locator(".assistant", { hasText: "Beta line 3" }).count()), "both answers streaming");
    assert.equal(await tabA.locator(".assistant", { hasText: "Alpha line 60" }).count(), 0, "the first still streaming");
    assert.equal(await tabB.locator(".assistant", { hasText: "Beta line 60" }).count(), 0, "the second still streaming");
    await kit.shot("both streaming");
    await tabA.locator(".assistant", { hasText: "Alpha line 60 of the story." }).waitFor({ timeout: 2 * T });
    await tabB.locator(".assistant", { hasText: "Beta line 60 of the story." }).waitFor({ timeout: 2 * T });
    assert.equal(await tabA.locator(".assistant", { hasText: "Beta" }).count(), 0, "nothing of the other chat");
    assert.equal(await tabB.locator(".assistant", { hasText: "Alpha" }).count(), 0, "nothing of the other chat");
    await tabTitled("beta story").waitFor({ timeout: T });
    assert.equal(await tabTitled("greet in Python").count(), 1, "the moved chat keeps its first message as its title");
    assert.equal(await (await sidebar()).locator(".user", { hasText: "beta story" }).count(), 0, "not drawn in the side bar");
  });

  await run("an image pasted into the input is a removable chip, then sent with the prompt", async () => {
    const paste = () => tabB.evaluate((data) => {
      const bytes = Uint8Array.from(atob(data), (ch) => ch.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], "screenshot.png", { type: "image/png" }));
      document.getElementById("input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: transfer, bubbles: true, cancelable: true }));
    }, PNG);
    await tabB.locator("#input").click();
    await paste();
    await paste();
    await tabB.locator("#attachments .chip").nth(1).waitFor({ timeout: T });
    await kit.shot("two pasted images");
    await tabB.locator("#attachments .chip button.remove").first().click();
    await until(async () => (await tabB.locator("#attachments .chip").count()) === 1, "one chip left");
    await sendIn(tabB, "what is in this picture?");
    const thumb = tabB.locator(".user", { hasText: "what is in this picture?" }).locator("img.thumb");
    await thumb.waitFor({ timeout: T });
    assert.equal(await thumb.evaluate((img) => img.complete && img.naturalWidth), 24, "the image decoded and drawn");
    await tabB.locator(".assistant", { hasText: "I see a small red square." }).waitFor({ timeout: T });
    assert.equal(await tabB.locator("#attachments .chip").count(), 0);
    assert.equal(await tabTitled("beta story").count(), 1, "the tab keeps its first message as its title");
    const sessions = join(work, ".pi", "sessions");
    const stored = readdirSync(sessions).filter((f) => f.endsWith(".jsonl")).flatMap((f) =>
      readFileSync(join(sessions, f), "utf8").split("\n").filter((l) => l.includes("what is in this picture?")));
    const images = stored.map((l) => JSON.parse(l)).filter((e) => e.type === "message")
      .flatMap((e) => e.message.content.filter((b) => b.type === "image"));
    assert.deepEqual(images, [{ type: "image", mimeType: "image/png", data: PNG }], "one image stored with the prompt");
  });

  await run("History searches the text of all sessions and opens the chosen one at the match", async () => {
    // a conversation in the side bar's chat, on a new session, that no tab shows
    await chatActions(page);
    await page.locator(".part.sidebar .pane-header .action-label[aria-label='pi: New Session']").click({ timeout: T });
    const chat = await sidebar();
    await chat.locator(".user").first().waitFor({ state: "detached", timeout: T });
    await sendIn(chat, "tell me about Freedonia");
    await chat.locator(".assistant", { hasText: "Fredville, by the sea." }).waitFor({ timeout: 2 * T });

    await tabA.locator("#input").click();
    await titleAction("pi: History in a Chat Tab").click({ timeout: T });
    await page.locator(".quick-input-widget input").fill("fredville");
    const hit = page.locator(".quick-input-list .monaco-list-row", { hasText: "capital is Fredville" });
    await hit.waitFor({ timeout: T });
    await kit.shot("the search's hits");
    await hit.click();
    const opened = await tabWith("tell me about Freedonia");
    const mark = opened.locator("mark.found");
    await mark.waitFor({ timeout: T });
    assert.equal(await mark.textContent(), "Fredville");
    const { y, height } = await mark.evaluate((m) => m.getBoundingClientRect().toJSON());
    const viewport = await opened.evaluate(() => window.innerHeight);
    assert.ok(y >= 0 && y + height <= viewport, `the match is in view (y=${y}, view ${viewport})`);
    await tabTitled("tell me about Freedonia").waitFor({ timeout: T });
  });
  await run("a tab's chat goes on after the daemon dies and is started again", async () => {
    const daemons = () => daemonPids(join(kit.root, "script.json"));
    const before = daemons();
    assert.equal(before.length, 1, `one daemon runs: ${before}`);
    process.kill(before[0], "SIGKILL");
    let now = [];
    await until(() => { now = daemons(); return now.length === 1 && now[0] !== before[0]; }, "the daemon started again")
      .catch((error) => { throw new Error(`${error.message}: was ${before}, now ${now}`); });
    // started and answering: the side bar's chat says so once the new daemon is initialized
    await (await sidebar()).locator(".notice", { hasText: "was restarted" }).waitFor({ timeout: T });
    // the new daemon's faux script starts over: the beta chat's own reply comes again
    await tabTitled("beta story").click(); // in front again (History's tab may have opened over it)
    await sendIn(tabB, "beta story, once more");
    await tabB.locator(".user", { hasText: "beta story, once more" }).waitFor({ timeout: T });
    await tabB.locator(".assistant").last().filter({ hasText: "Beta line 60 of the story." }).waitFor({ timeout: 2 * T });
    assert.equal(await tabB.locator(".user", { hasText: "what is in this picture?" }).count(), 1, "the conversation is still there");
    await tabTitled("beta story").waitFor({ timeout: T });
  });
  await run("the chat tabs come back with the window, each on its session", async () => {
    await page.reload();
    await page.waitForSelector(".monaco-workbench", { timeout: T });
    await tabTitled("beta story").waitFor({ timeout: T });
    await tabTitled("tell me about Freedonia").waitFor({ timeout: T });
    await tabTitled("beta story").click();
    const beta = await tabWith("beta story, once more");
    await beta.locator(".user", { hasText: "what is in this picture?" }).locator("img.thumb").waitFor({ timeout: T });
    await beta.locator(".assistant", { hasText: "I see a small red square." }).waitFor({ timeout: T });
  });
} catch (error) {
  await kit.fail(error);
} finally {
  const ok = await kit.close();
  process.exit(ok ? 0 : 1);
}
