// Issue #29's review and permission flows in a real VS Code (code-server, headless Chromium), driven as a
// user with scripted faux replies: a long bash command's permission readable (the whole command shown, whole
// button labels), a write's permission answered in the native diff editor's title bar (Accept applies), an
// edit's rejected from the chat's card under the call (the file stays), the Session Tree showing the conversation and asking before going back
// (cancel changes nothing, confirm goes back), the resume list's one-line titles and local times, "revert
// run" asking and reporting while the reverted hunks leave the Changes view, and Stop keeping the output of
// a command that was streaming. A screenshot per step, named review-NN-….
//
//   node e2e/flows29-review.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { join, resolve } from "node:path";
import assert from "node:assert/strict";
import { launch, daemonSettings, until } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });

const pipeline = `python3 -c "print('checking the build')" && `
  + Array.from({ length: 70 }, (_, i) => `echo step-${i}-of-the-release-pipeline`).join(" && ") + " && echo PIPELINE-END";
const streaming = "for i in $(seq 1 600); do echo progress-line-$i; sleep 0.05; done";
const notes = Array.from({ length: 30 }, (_, i) => `line ${i + 1}\n`).join("");

const replies = [
  call("b1", "bash", { command: pipeline }), text("The pipeline ran."),
  call("w1", "write", { path: "review.txt", content: "written after review\n" }), text("Written."),
  call("e1", "edit", { path: "review.txt", edits: [{ oldText: "written", newText: "REWRITTEN" }] }), text("Edit refused, fine."),
  call("e2", "edit", { path: "notes.txt", edits: [{ oldText: "line 2\n", newText: "line TWO\n" },
                                                  { oldText: "line 25\n", newText: "line TWENTY-FIVE\n" }] }),
  text("Two lines changed."),
  call("b2", "bash", { command: streaming }), text("not reached: the run is stopped"),
];

const kit = await launch({
  cache, out, prefix: "review-",
  settings: (root) => daemonSettings(root, { modelId: "script", chunkSize: 4, delayMs: 10, replies }),
  prepare(_root, work) {
    writeFileSync(join(work, "notes.txt"), notes);
  },
});
const { page, chat, run, shot, send, command, pick, review, work, T } = kit;
const dialog = page.locator(".monaco-dialog-box");
const onDisk = (name) => (existsSync(join(work, name)) ? readFileSync(join(work, name), "utf8") : null);

try {
  await kit.open();

  await run("open the chat", () => kit.openChat("faux/script"));

  await run("a long command's permission: the whole command shown, whole button labels", async () => {
    await send("run the release pipeline");
    await dialog.waitFor({ timeout: T });
    const shown = await dialog.innerText();
    assert.ok(shown.replace(/\s+/g, " ").includes(`$ ${pipeline}`), shown);
    assert.ok(shown.includes("remember: exactly this command"), shown);
    const buttons = dialog.locator(".dialog-buttons .monaco-button");
    const labels = await buttons.allInnerTexts();
    assert.deepEqual(labels.map((l) => l.trim()).filter((l) => l !== "Cancel").sort(), // the platform orders them
                     ["Allow for this session", "Allow once", "Always allow…", "Always reject…", "Edit command…", "Reject",
                      "Reject and stop", "Reject with reason…"]);
    for (const button of await buttons.all()) { // each label drawn whole, nothing cut off
      const [scroll, client] = await button.evaluate((b) => [b.scrollWidth, b.clientWidth]);
      assert.ok(scroll <= client, `${await button.innerText()} is clipped (${scroll} > ${client})`);
    }
    // the end of the command can be read: inside the dialog's own view, reached by scrolling if need be
    const end = dialog.locator(".dialog-message-detail");
    await end.evaluate((node) => node.scrollIntoView({ block: "end" }));
    const box = await dialog.boundingBox();
    assert.ok(box.y >= 0 && box.y + box.height <= 900, `the dialog fits the window: ${JSON.stringify(box)}`);
    await shot("the long command's permission");
    await dialog.locator(".monaco-button", { hasText: "Allow once" }).click();
    await chat().locator(".assistant", { hasText: "The pipeline ran." }).waitFor({ timeout: T });
  });

  await run("a write opens the diff editor; Accept in its title bar applies it", async () => {
    await send("write the review file");
    const tab = page.locator(".tabs-container .tab", { hasText: "review.txt: pi's proposed write" });
    await tab.waitFor({ timeout: T });
    await page.locator(".monaco-diff-editor .modified .view-lines", { hasText: "written after review" }).waitFor({ timeout: T });
    await shot("the proposed write, Accept and Reject in the title bar");
    await page.locator(".editor-actions .action-label[aria-label^='pi: Accept the Proposed Change']").first().click({ timeout: T });
    await tab.waitFor({ state: "detached", timeout: T });
    await chat().locator(".assistant", { hasText: "Written." }).waitFor({ timeout: T });
    await command("File: Save All");
    await until(() => onDisk("review.txt") === "written after review\n", "the save");
    assert.equal(onDisk("review.txt"), "written after review\n");
  });

  await run("an edit's diff closed unanswered waits; reopened and Rejected from the chat: the file stays", async () => {
    await send("rewrite a word");
    await page.locator(".monaco-diff-editor .modified .view-lines", { hasText: "REWRITTEN after review" }).waitFor({ timeout: T });
    await page.locator(".monaco-diff-editor .original .view-lines", { hasText: "written after review" }).waitFor({ timeout: T });
    await chat().locator(".permission", { hasText: "pi wants to edit review.txt" }).waitFor({ timeout: T });
    await shot("the proposed edit against the file, the answers in the chat");
    // closed without an answer: the request waits, its card stays and brings the diff back
    const tab = page.locator(".tabs-container .tab", { hasText: "review.txt: pi's proposed edit" });
    await command("View: Close Editor");
    await tab.waitFor({ state: "detached", timeout: T });
    const card = chat().locator(".permission", { hasText: "pi wants to edit review.txt" });
    assert.equal(await card.count(), 1);
    await page.locator(".statusbar-item", { hasText: "pi waits for your answer to its edit of review.txt" }).waitFor({ timeout: T });
    assert.equal(await chat().locator(".assistant", { hasText: "Edit refused, fine." }).count(), 0);
    await card.getByRole("button", { name: "Show diff", exact: true }).click();
    await review("review.txt", "Reject");
    await page.locator(".statusbar-item", { hasText: "pi waits for your answer" }).waitFor({ state: "detached", timeout: T });
    await chat().locator(".assistant", { hasText: "Edit refused, fine." }).waitFor({ timeout: T });
    assert.ok(await chat().locator("details.tool.failed", { hasText: "edit review.txt" }).count());
    assert.equal(onDisk("review.txt"), "written after review\n");
  });

  const tree = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Session Tree" }) });
  await run("the Session Tree shows the conversation, not the file's bookkeeping", async () => {
    await command("pi: Focus on Session Tree View");
    await command("pi: Refresh Session Tree");
    await tree.locator(".monaco-list-row", { hasText: "pi: Edit refused, fine." }).waitFor({ timeout: T });
    const rows = (await tree.locator(".monaco-list-row").allInnerTexts()).map((r) => r.replace(/\s+/g, " ").trim());
    assert.deepEqual(rows.map((r) => r.split(":")[0]), ["you", "pi", "you", "pi", "you", "pi"], rows.join("\n"));
    assert.ok(!rows.some((r) => /model change|thinking level|toolResult|tool result/.test(r)), rows.join("\n"));
  });

  await run("a tree click asks first: cancelled, nothing changes; confirmed, the conversation goes back", async () => {
    const before = await chat().locator(".m").count();
    const row = tree.locator(".monaco-list-row", { hasText: "pi: The pipeline ran." });
    await row.click();
    await dialog.waitFor({ timeout: T });
    const asked = await dialog.innerText();
    assert.ok(asked.includes("Go back to this message?") && asked.includes("stays in the Session Tree as a branch"), asked);
    await shot("the tree click's question");
    await dialog.locator(".monaco-button", { hasText: "Cancel" }).click();
    await dialog.waitFor({ state: "detached", timeout: T });
    assert.equal(await chat().locator(".m").count(), before);
    assert.ok(await chat().locator(".assistant", { hasText: "Edit refused, fine." }).count());

    await row.click();
    await dialog.waitFor({ timeout: T });
    await dialog.locator(".monaco-button", { hasText: "Go back" }).click();
    await chat().locator(".assistant", { hasText: "Written." }).waitFor({ state: "detached", timeout: T });
    await chat().locator(".assistant", { hasText: "The pipeline ran." }).waitFor({ timeout: T });
    await tree.locator(".monaco-list-row", { hasText: "current" }).filter({ hasText: "The pipeline ran." }).waitFor({ timeout: T });
  });

  await run("the resume list: one-line titles and a local time", async () => {
    await command("pi: Resume Session");
    const row = page.locator(".quick-input-list .monaco-list-row").first();
    await row.waitFor({ timeout: T });
    assert.equal(await row.locator(".label-name").innerText(), "run the release pipeline");
    assert.match(await row.locator(".label-description").innerText(), /^today \d\d:\d\d · \d+ messages$/);
    assert.ok((await row.boundingBox()).height < 30, "one line per session");
    await shot("the resume list");
    await page.keyboard.press("Escape");
  });

  const changes = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Changes" }) });
  await run("revert run asks with the counts, reports, and the reverted hunks leave the Changes view", async () => {
    await send("change two lines");
    await review("notes.txt", "Accept");
    await chat().locator(".assistant", { hasText: "Two lines changed." }).waitFor({ timeout: T });
    await command("pi: Focus on Changes View");
    const hunks = changes.locator(".monaco-list-row", { hasText: "@@" });
    await hunks.nth(1).waitFor({ timeout: T });
    await changes.locator(".pane-header").hover();
    await changes.locator(".pane-header .action-label[aria-label='pi: Revert']").click({ timeout: T });
    await dialog.waitFor({ timeout: T });
    const asked = await dialog.innerText();
    assert.ok(asked.includes("Revert run") && asked.includes("2 hunks in 1 file") && asked.includes("notes.txt (2 hunks)"), asked);
    await shot("revert run asks first");
    await dialog.locator(".monaco-button", { hasText: "Revert" }).click();
    await page.locator(".notification-toast", { hasText: "pi: reverted 2 hunks in 1 file" }).waitFor({ timeout: T });
    await hunks.first().waitFor({ state: "detached", timeout: T });
    await command("File: Save All");
    await until(() => onDisk("notes.txt") === notes, "the save");
    assert.equal(onDisk("notes.txt"), notes);
  });

  await run("Stop keeps the output of the command that was streaming", async () => {
    await send("run the long job");
    await dialog.waitFor({ timeout: T });
    await dialog.locator(".monaco-button", { hasText: "Allow once" }).click();
    const tool = chat().locator("details.tool", { hasText: "bash for i in" }).last();
    await tool.locator("summary").click();
    await tool.locator(".output", { hasText: "progress-line-8" }).waitFor({ timeout: T });
    await chat().locator("#stop").click();
    await chat().locator("details.tool.stopped").waitFor({ timeout: T });
    const output = await tool.locator(".output").innerText();
    assert.ok(output.includes("progress-line-1\n") && output.includes("progress-line-8"), output);
    assert.ok(output.trimEnd().endsWith("[stopped by the user]"), output);
    assert.match(await tool.locator("summary").innerText(), /\(stopped\)/);
    await tool.locator(".output").evaluate((node) => node.scrollIntoView({ block: "end" }));
  });
} catch (error) {
  await kit.fail(error);
}
const ok = await kit.close();
console.log(`screenshots in ${out}`);
process.exit(ok ? 0 : 1);
