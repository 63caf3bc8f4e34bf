// The extension in a real VS Code (code-server) in headless Chromium, driven as a user with
// the offline faux model: open the chat, prompt and watch it stream, steer and follow up while
// it works, click a queued item away, stop, mention a file with @, answer a write in its review diff, revert and accept
// a run's hunks from the diff editor's title bar, resume a session and see its tool outputs, an edit that breaks
// TypeScript reporting VS Code's error, the definition of a function found by VS Code, change a setting,
// rewind a message (chat and Session Tree), plan mode and executing the plan, a subagent streaming in its task
// call (flows28.mjs), switch the model; all in a project whose own settings try to start another program. A screenshot is kept
// after each step (and of a failure) in the output folder.
//
//   node e2e/run.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import { mkdirSync, writeFileSync, existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import assert from "node:assert/strict";
import { launch, daemonSettings, until } from "./harness.mjs";
import * as issue28 from "./flows28.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const only28 = process.env.PI_E2E_ONLY === "28"; // flows28.mjs alone, with its replies only (while working on them)
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));
const notes = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join("");
let trapped;

const long = Array.from({ length: 40 }, (_, i) => `Line ${i} of a **long** answer.`).join("\n\n");
const script = {
  modelId: "script", chunkSize: 3, delayMs: 25,
  replies: only28 ? issue28.replies : [
    { content: [{ type: "thinking", thinking: "Thinking about the greeting." },
                { type: "text", text: "Hello! Here is code:\n\n```js\nconsole.log('hi');\n```\n\n" + long }] },
    { content: [{ type: "text", text: "Steered answer." }] },
    { content: [{ type: "text", text: "Follow-up answer." }] },
    { content: [{ type: "text", text: "x".repeat(3000) }] },
    { content: [{ type: "text", text: "It is a project's readme." }] },
    { content: [{ type: "toolCall", id: "w1", name: "write", arguments: { path: "made.txt", content: "made by pi\n" } }],
      stopReason: "toolUse" },
    { content: [{ type: "text", text: "The file is written." }] },
    { content: [{ type: "toolCall", id: "e1", name: "edit", arguments: { path: "notes.txt", edits: [
        { oldText: "line 2\n", newText: "line TWO\n" }, { oldText: "line 25\n", newText: "line TWENTY-FIVE\n" }] } }],
      stopReason: "toolUse" },
    { content: [{ type: "text", text: "Two lines changed." }] },
    { content: [{ type: "toolCall", id: "d1", name: "definition", arguments: { path: "src/main.ts", line: 2,
                                                                                symbol: "double" } }],
      stopReason: "toolUse" },
    { content: [{ type: "text", text: "It is in util.ts." }] },
    { content: [{ type: "toolCall", id: "e2", name: "edit", arguments: { path: "src/main.ts", edits: [
        { oldText: "double(2)", newText: 'double("two")' }] } }], stopReason: "toolUse" },
    { content: [{ type: "text", text: "I broke it." }] },
    ...issue28.replies,
  ],
};
const kit = await launch({
  cache, out,
  prepare(root, work) {
    writeFileSync(join(work, "README.md"), "# a project\n");
    // The project is hostile: its own settings name a program to start and arguments that lower protections.
    // Only the user's settings may (pi.command and pi.args are machine-scoped), so the trap must never run.
    trapped = join(root, "trap-ran");
    mkdirSync(join(work, ".vscode"));
    writeFileSync(join(work, "trap.sh"), `#!/bin/sh\necho "$@" >> ${trapped}\n`, { mode: 0o755 });
    writeFileSync(join(work, ".vscode", "settings.json"), JSON.stringify({
      "pi.command": join(work, "trap.sh"), "pi.args": ["--yes", "--trust-workspace"] }));
    writeFileSync(join(work, "notes.txt"), notes);
    // TypeScript for VS Code's built-in language features; the agent's edits wait up to 15 s for them to report.
    mkdirSync(join(work, "src"));
    writeFileSync(join(work, "src", "util.ts"), "export function double(n: number): number {\n  return n * 2;\n}\n");
    writeFileSync(join(work, "src", "main.ts"), 'import { double } from "./util";\nexport const four: number = double(2);\n');
    mkdirSync(join(work, ".pi"));
    writeFileSync(join(work, ".pi", "settings.json"), JSON.stringify({ diagnostics: { waitMs: 15000 } }));
    issue28.prepare(work);
  },
  settings: (root) => ({
    ...daemonSettings(root, script),
    // Every TypeScript answer from the project's server: its quick one-file server would answer a definition
    // with the import line while the project loads.
    "typescript.tsserver.useSyntaxServer": "never",
  }),
});
const { page, chat, shot, send, command, closeModal, pick, openFile, review, work, T } = kit;
const run = (name, fn, always = false) => (only28 && !always ? undefined : kit.run(name, fn));

try {
  await kit.open();

  await run("open the chat", () => kit.openChat("faux/script"), true);

  await run("prompt and watch it stream", async () => {
    await send("hello");
    await chat().locator(".assistant", { hasText: "Line 2 of a" }).waitFor({ timeout: T });
    assert.equal(await chat().locator(".assistant .code button.copy").count(), 1);
    assert.equal(await chat().locator(".assistant strong").first().textContent(), "long");
    assert.ok(!(await chat().locator(".assistant", { hasText: "Line 39" }).count()), "still streaming");
  });

  let followUpsSent = 0;
  await run("steer and follow up while it works; click a queued item away", async () => {
    await send("steer this way");
    await pick("Steer");
    await send("drop this one");
    await pick("Follow up");
    await send("and afterwards");
    await pick("Follow up");
    const queue = chat().locator("#queue li");
    await queue.nth(2).waitFor({ timeout: T });
    await shot("three queued while it streams");
    await chat().locator("#queue li", { hasText: "drop this one" }).click({ timeout: T });
    await chat().locator("#queue li", { hasText: "drop this one" }).waitFor({ state: "detached", timeout: T });
    assert.ok(!(await chat().locator(".assistant", { hasText: "Line 39" }).count()), "removed while it streamed");
    await chat().locator(".assistant", { hasText: "Follow-up answer." }).waitFor({ timeout: 2 * T });
    followUpsSent = await chat().locator(".user", { hasText: "drop this one" }).count();
    assert.equal(followUpsSent, 0);
    assert.equal(await chat().locator(".user", { hasText: "steer this way" }).count(), 1);
    assert.equal(await chat().locator(".user", { hasText: "and afterwards" }).count(), 1);
  });

  await run("stop", async () => {
    await send("talk for long");
    await chat().locator(".assistant", { hasText: "xxxxxxxxxx" }).waitFor({ timeout: T });
    await chat().locator("#stop").click();
    await chat().locator(".assistant .note", { hasText: "stopped" }).waitFor({ timeout: T });
    assert.equal(await chat().locator(".error").count(), 0);
    assert.equal(await page.locator(".notifications-toasts .notification-toast", { hasText: "abort" }).count(), 0);
  });

  await run("mention a file with @", async () => {
    const input = chat().locator("#input");
    await input.click();
    await page.keyboard.type("what is in @");
    await chat().locator("#suggest li", { hasText: "@README.md" }).waitFor({ timeout: T });
    await page.keyboard.type("READ");
    await shot("the files offered after @");
    await page.keyboard.press("Enter");
    assert.equal(await input.inputValue(), "what is in @README.md ");
    await page.keyboard.type("?");
    await page.keyboard.press("Enter");
    await chat().locator(".assistant", { hasText: "It is a project's readme." }).waitFor({ timeout: T });
    const context = chat().locator(".user details.context").last();
    assert.equal(await context.locator("summary").textContent(), "context: README.md");
    // the daemon read the file into the stored message: what it sent back shows its text
    assert.match(await context.locator("pre").textContent(), /^README\.md line 1:\n\s+1\t# a project/);
  });

  await run("answer a write's permission in its review diff", async () => {
    await send("write a file");
    const diff = page.locator(".monaco-diff-editor").first();
    await diff.locator(".modified .view-lines", { hasText: "made by pi" }).waitFor({ timeout: T });
    await shot("the proposed write in the diff editor");
    await review("made.txt", "Accept");
    await chat().locator(".assistant", { hasText: "The file is written." }).waitFor({ timeout: T });
    // the write went through VS Code (workspace.applyEdit): the document holds it, unsaved
    const onDisk = () => (existsSync(join(work, "made.txt")) ? readFileSync(join(work, "made.txt"), "utf8") : null);
    assert.notEqual(onDisk(), "made by pi\n");
    await openFile("made.txt", "made by pi");
    await shot("the agent's write in the editor, unsaved");
    await command("File: Save");
    await until(() => onDisk() === "made by pi\n", "made.txt saved").catch(() => {});
    assert.equal(onDisk(), "made by pi\n"); // saved when the user chose to
  });

  await run("revert and accept a run's hunks from the diff editor's title bar", async () => {
    await send("change two lines");
    await review("notes.txt", "Accept");
    await chat().locator(".assistant", { hasText: "Two lines changed." }).waitFor({ timeout: T });
    await command("pi: Focus on Changes View");
    const changes = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Changes" }) });
    const hunks = changes.locator(".monaco-list-row", { hasText: "@@" });
    await hunks.nth(1).waitFor({ timeout: T });
    assert.equal(await hunks.count(), 2);
    const titleAction = (label) => page.locator(`.editor-actions .action-label[aria-label^='${label}']`).first();

    await changes.locator(".monaco-list-row", { hasText: "@@ -1,5 +1,5 @@" }).click();
    await page.locator(".monaco-diff-editor").waitFor({ timeout: T });
    await shot("the run's diff, the cursor at its first hunk");
    await titleAction("pi: Revert the Hunk at the Cursor").click({ timeout: T });
    await changes.locator(".monaco-list-row", { hasText: "@@ -1,5 +1,5 @@" }).waitFor({ state: "detached", timeout: T });
    assert.equal(await hunks.count(), 1);
    // the revert went through VS Code: the document holds it; saved, the file has the other hunk only
    await command("File: Save");
    const expected = notes.replace("line 25\n", "line TWENTY-FIVE\n");
    const onDisk = () => readFileSync(join(work, "notes.txt"), "utf8");
    await until(() => onDisk() === expected, "notes.txt reverted").catch(() => {});
    assert.equal(onDisk(), expected);

    const left = changes.locator(".monaco-list-row", { hasText: "@@ -22,7 +22,7 @@" });
    await left.click();
    await titleAction("pi: Accept the Hunk at the Cursor").click({ timeout: T });
    // accepted, the hunk is done: it leaves the list, and with it the file that has no other
    await left.waitFor({ state: "detached", timeout: T });
    await changes.locator(".monaco-list-row", { hasText: "notes.txt" }).waitFor({ state: "detached", timeout: T });
    assert.equal(onDisk(), expected); // accepting changes no file
  });

  await run("resume the session and see its tool outputs", async () => {
    await command("pi: New Session");
    await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
    await command("pi: Resume Session");
    await pick("hello");
    await chat().locator(".assistant", { hasText: "The file is written." }).waitFor({ timeout: T });
    const tool = chat().locator("details.tool", { hasText: "write" });
    await tool.locator("summary").click();
    assert.match(await tool.locator(".output").textContent(), /made\.txt/);
    assert.match(await tool.locator(".args").textContent(), /^made\.txt\nmade by pi/);
  });

  await run("definition finds a function in another file", async () => {
    await send("where is double defined?");
    await chat().locator(".assistant", { hasText: "It is in util.ts." }).waitFor({ timeout: T });
    const tool = chat().locator("details.tool", { hasText: "definition" }).last();
    await tool.locator("summary").click();
    const output = await tool.locator(".output").textContent();
    assert.match(output, /src\/util\.ts:1:17\s+export function double/, output);
  });

  await run("an agent edit that breaks a .ts file reports the error VS Code shows", async () => {
    // the file is open, as when a user works on it (TypeScript checks the files shown in editors)
    await openFile("main.ts", "double(2)");
    await send("pass it a string");
    await review("main.ts", "Accept");
    await chat().locator(".assistant", { hasText: "I broke it." }).waitFor({ timeout: T });
    const tool = chat().locator("details.tool", { hasText: "main.ts" }).last();
    await tool.locator("summary").click();
    const output = await tool.locator(".output").textContent();
    assert.match(output, /This change introduced 1 error\(s\)/, output);
    assert.match(output, /src\/main\.ts:2:\d+ error: Argument of type '.*' is not assignable to parameter of type 'number'/,
                 output);
  });

  await issue28.flows({ page, chat, run: (name, fn) => run(name, fn, true), shot, send, command, openFile, review, work, T });

  await run("settings apply when they change", async () => {
    await page.locator(".statusbar-item", { hasText: "π faux/script" }).waitFor({ timeout: T });
    await command("Preferences: Open User Settings");
    await page.locator(".settings-editor .search-container").first().click({ timeout: T });
    await page.keyboard.type("pi.model");
    const field = page.locator(".settings-editor .setting-item-contents", { hasText: "provider/id passed as --model" }).locator("input").first();
    await field.waitFor({ timeout: T });
    await field.fill("faux/echo");
    await field.press("Tab");
    await page.locator(".notification-toast", { hasText: "the daemon was restarted" }).waitFor({ timeout: T });
    await shot("restarted with the new settings");
    await closeModal(); // the settings editor
    await command("pi: New Session");
    await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
    await page.locator(".statusbar-item", { hasText: "π faux/echo" }).waitFor({ timeout: T });
    assert.equal((await page.locator(".statusbar-item", { hasText: "π faux/echo" }).innerText()).trim(), "π faux/echo");
  });

  await run("switch the model", async () => {
    await page.locator(".statusbar-item", { hasText: "π faux/echo" }).click();
    const current = page.locator(".quick-input-list .monaco-list-row", { hasText: "faux/echo" }).first();
    assert.match(await current.innerText(), /current/);
    await pick("faux/script");
    await page.locator(".statusbar-item", { hasText: "π faux/script" }).waitFor({ timeout: T });
  });
} catch (error) {
  await kit.fail(error);
}
let failed = !(await kit.close());
if (existsSync(trapped)) {
  failed = true;
  console.log(`not ok - the workspace's own settings started a program: ${readFileSync(trapped, "utf8")}`);
}
console.log(`screenshots in ${out}`);
process.exit(failed ? 1 : 0);
