// Issue #28's flows, driven as a user in the same code-server as run.mjs: rewind a user message from the chat
// (the modal lists the file, the file goes back, the chat is redrawn, the text is back in the input), rewind
// from the Session Tree, switch to plan mode and see a write refused, execute the plan, and a task call whose
// subagent streams nested under it. `replies` go at the end of run.mjs's faux script, in the order these run.
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { until } from "./harness.mjs";

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const when = (marker, reply) => ({ ...reply, when: marker }); // a subagent's reply: its prompt contains the marker

const SUBAGENT = "Count the lines of notes.txt";
const counted = Array.from({ length: 60 }, (_, i) => `Counted line ${i + 1}.`).join(" ");

export const replies = [
  // rewind
  call("g1", "edit", { path: "greeting.txt", edits: [{ oldText: "hello", newText: "hi there" }] }),
  text("The greeting is changed."),
  call("g2", "write", { path: "extra.txt", content: "one more\n" }),
  text("Another file."),
  // plan mode, then its execution
  call("p1", "write", { path: "plan.txt", content: "planned\n" }),
  text("The plan:\n\n1. Write plan.txt.\n2. Check it."),
  call("p2", "write", { path: "plan.txt", content: "planned\n" }),
  text("Plan carried out."),
  // a subagent: the parent's task call, the child's own replies (by its prompt), the parent's answer
  call("t1", "task", { prompt: `${SUBAGENT} and say how many there are.`, description: "count the lines" }),
  when(SUBAGENT, call("c1", "read", { path: "notes.txt" })),
  when(SUBAGENT, text(`${counted} There are 30 lines.`)),
  text("The subagent counted 30 lines."),
];

export function prepare(work) {
  writeFileSync(join(work, "greeting.txt"), "hello\n");
}

export async function flows({ page, chat, run, shot, send, command, openFile, review, work, T }) {
  const dialog = page.locator(".monaco-dialog-box");
  const onDisk = (name) => readFileSync(join(work, name), "utf8");
  // The input is filled once the rewound conversation is redrawn, after the old messages go.
  const valueBecomes = async (selector, want) => {
    const field = chat().locator(selector);
    await until(async () => (await field.inputValue()) === want, `${selector} to read ${JSON.stringify(want)}`).catch(() => {});
    assert.equal(await field.inputValue(), want);
  };
  const allow = (file) => review(file, "Accept"); // a write/edit is answered in its review diff

  await run("rewind a message from the chat: the file goes back, the text comes back to the input", async () => {
    await command("pi: New Session");
    await chat().locator(".m").first().waitFor({ state: "detached", timeout: T });
    await send("change the greeting");
    await allow("greeting.txt");
    await chat().locator(".assistant", { hasText: "The greeting is changed." }).waitFor({ timeout: T });
    await openFile("greeting.txt", "hi there");
    await command("File: Save");
    await until(() => onDisk("greeting.txt") === "hi there\n", "the save");
    assert.equal(onDisk("greeting.txt"), "hi there\n");

    const message = chat().locator(".user", { hasText: "change the greeting" });
    await message.hover();
    await message.locator("button.rewind").click({ timeout: T });
    await dialog.waitFor({ timeout: T });
    const shown = await dialog.innerText();
    assert.ok(shown.includes("Rewind to here?") && shown.includes("greeting.txt (restored)"), shown);
    await shot("the rewind's confirmation lists the file");
    await dialog.locator(".monaco-button", { hasText: "Rewind conversation and files" }).click();
    await message.waitFor({ state: "detached", timeout: T });
    assert.equal(await chat().locator(".assistant", { hasText: "The greeting is changed." }).count(), 0);
    await valueBecomes("#input", "change the greeting");
    // through VS Code: the open document holds the old text; saved, so does the disk
    await page.locator(".monaco-editor .view-lines", { hasText: "hello" }).waitFor({ timeout: T });
    await command("File: Save");
    await until(() => onDisk("greeting.txt") === "hello\n", "the save");
    assert.equal(onDisk("greeting.txt"), "hello\n");
  });

  await run("rewind from the Session Tree, the conversation only", async () => {
    await send("add another file");
    await allow("extra.txt");
    await chat().locator(".assistant", { hasText: "Another file." }).waitFor({ timeout: T });
    await command("pi: Focus on Session Tree View");
    const tree = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Session Tree" }) });
    await command("pi: Refresh Session Tree");
    const row = tree.locator(".monaco-list-row", { hasText: "you: add another file" });
    await row.waitFor({ timeout: T });
    await row.hover();
    await row.locator(".action-label[aria-label^='pi: Rewind to Here']").click({ timeout: T });
    await dialog.waitFor({ timeout: T });
    assert.ok((await dialog.innerText()).includes("extra.txt (deleted)"));
    await dialog.locator(".monaco-button", { hasText: "Rewind conversation only" }).click();
    await chat().locator(".user", { hasText: "add another file" }).waitFor({ state: "detached", timeout: T });
    await valueBecomes("#input", "add another file");
    assert.equal(await chat().locator(".m").count(), 0);
    assert.ok(existsSync(join(work, "extra.txt")), "files kept: the agent's extra.txt stays");
  });

  await run("switch to plan mode: a write is refused, then execute the plan", async () => {
    await chat().locator("#mode [data-mode=plan]").click();
    await page.locator(".statusbar-item", { hasText: "plan" }).waitFor({ timeout: T });
    await send("plan the change");
    await chat().locator(".assistant", { hasText: "The plan:" }).waitFor({ timeout: T });
    const refused = chat().locator("details.tool.failed", { hasText: "write plan.txt" });
    await refused.locator("summary").click();
    assert.match(await refused.locator(".output").textContent(), /plan mode/);
    await refused.locator("summary").click(); // closed again, so the plan and its actions show
    const execute = chat().locator(".plan-actions button", { hasText: "Execute the plan" });
    await execute.waitFor({ timeout: T });
    assert.equal(await dialog.count(), 0, "nothing was asked in plan mode");
    await execute.scrollIntoViewIfNeeded();
    await shot("the plan with its execute actions");
    await execute.click();
    await page.locator(".statusbar-item", { hasText: "ask" }).waitFor({ timeout: T });
    await chat().locator("#mode [data-mode=ask][aria-checked=true]").waitFor({ timeout: T });
    await chat().locator(".user", { hasText: "Go ahead with the plan." }).waitFor({ timeout: T });
    await allow("plan.txt"); // ask mode asks again
    await chat().locator(".assistant", { hasText: "Plan carried out." }).waitFor({ timeout: T });
    assert.equal(await chat().locator(".plan-actions").count(), 0);
  });

  await run("a task call streams its subagent nested under it", async () => {
    await send("delegate the counting");
    const task = chat().locator("details.tool.has-sub", { hasText: "task count the lines" });
    const sub = task.locator(".subagent");
    await sub.locator(".sub-body .assistant", { hasText: "Counted line 2." }).last().waitFor({ timeout: T });
    assert.match(await sub.getAttribute("class"), /running/, "still streaming");
    assert.equal(await sub.locator(".sub-status").textContent(), "running");
    assert.equal(await sub.locator("details.tool", { hasText: "read notes.txt" }).count(), 1);
    assert.equal(await sub.locator("button.sub-stop").count(), 1);
    await shot("the subagent streaming in its task call");
    await chat().locator(".assistant", { hasText: "The subagent counted 30 lines." }).waitFor({ timeout: T });
    assert.equal(await sub.locator(".sub-status").textContent(), "completed");
    assert.equal(await sub.locator("button.sub-stop").count(), 0);
    assert.match(await task.locator(":scope > .output").textContent(), /There are 30 lines\./);
    await sub.locator("button.sub-open").click(); // its session as a chat in a tab
    await page.locator(".tabs-container .tab", { hasText: "subagent: count the lines" }).waitFor({ timeout: T });
    await command("View: Close Editor"); // the side bar's chat is the only chat page again
    await page.locator(".tabs-container .tab", { hasText: "subagent: count the lines" }).waitFor({ state: "detached", timeout: T });
  });
}
