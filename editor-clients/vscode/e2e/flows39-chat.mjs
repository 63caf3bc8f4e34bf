// Issue #39's chat, driven as a user in a real VS Code (code-server, 1500×950) with the offline faux model: the
// agent's question as a card answered with typed words that the tool returns to the model; permission answers
// that steer (Reject with reason… whose words the model reads while the run goes on, Edit command… whose command
// is what ran, Reject and stop ending the run, said in the chat); and the agent's plan as a checklist pinned above
// the input, updating live and back after a window reload. A screenshot after each step (prefix "chat39-").
//
//   node e2e/flows39-chat.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import { launch, daemonSettings, until, chatFrames } from "./harness.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));

const text = (t) => ({ content: [{ type: "text", text: t }] });
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const plan = (statuses) => ["Read the failing test", "Fix the parser's handling of empty lines", "Run the whole suite"]
  .map((step, i) => ({ step, status: statuses[i] }));

const script = {
  modelId: "script", chunkSize: 6, delayMs: 10,
  // each scenario is a session of its own, answered by the replies for its first message (`when`)
  replies: [
    ...[call("q1", "ask_user", { question: "Which database should the cache use?", allowText: true,
                                 options: [{ label: "SQLite", description: "a file next to the app" },
                                           { label: "Postgres", description: "the server the app already has" }] }),
        text("DuckDB it is: I will add it to the cache module.")].map((r) => ({ ...r, when: "add a cache" })),
    ...[call("b1", "bash", { command: "rm -rf build" }), text("Understood: I will leave the build folder alone."),
        call("b2", "bash", { command: "echo from-the-agent" }), text("It printed what you chose."),
        call("b3", "bash", { command: "git push --force origin main" }), text("never said: the run was stopped")]
      .map((r) => ({ ...r, when: "tidy the repository" })),
    ...[call("p1", "update_plan", { explanation: "Three steps to a green suite.", plan: plan(["in_progress", "pending", "pending"]) }),
        call("r1", "bash", { command: "ls -a" }),
        call("p2", "update_plan", { plan: plan(["completed", "in_progress", "pending"]) }),
        text("The test is read; the parser is next.")].map((r) => ({ ...r, when: "fix the parser" })),
  ],
};

const kit = await launch({
  cache, out, prefix: "chat39-", viewport: { width: 1500, height: 950 },
  settings: (root) => ({ ...daemonSettings(root, script), "files.autoSave": "off" }),
});
const { page, command, run, shot, T } = kit;
const dialog = page.locator(".monaco-dialog-box");
const quickInput = page.locator(".quick-input-widget");
const sidebar = () => until(async () => (await chatFrames(page, "sidebar"))[0], "the side bar's chat");
async function sendIn(chat, words) {
  const input = chat.locator("#input");
  await input.click();
  await input.fill(words);
  await input.press("Enter");
}
const done = (chat) => chat.locator("#stop:disabled").waitFor({ timeout: T });
async function newSession() {
  await command("pi: New Session");
  await (await sidebar()).locator(".m").first().waitFor({ state: "detached", timeout: T });
}
// The permission modal's answer: its button, waited for.
async function answer(label) {
  await dialog.waitFor({ timeout: T });
  await dialog.locator(".monaco-button", { hasText: label }).first().click({ timeout: T });
  await dialog.waitFor({ state: "detached", timeout: T });
}
const output = (chat, id) => chat.locator(`details.tool[data-id=${id}] > .output`);

try {
  await kit.open();
  await run("open the chat", () => kit.openChat("faux/script"));

  await run("the agent asks: a card with the options and a text field; the typed answer is what the model reads", async () => {
    await command("View: Hide Panel").catch(() => undefined);
    const chat = await sidebar();
    await sendIn(chat, "add a cache to the app");
    const card = chat.locator(".question[data-id=q1]");
    await card.waitFor({ timeout: T });
    assert.equal(await card.locator(".q-text").innerText(), "Which database should the cache use?");
    assert.deepEqual(await card.locator("button.q-option .q-label").allInnerTexts(), ["SQLite", "Postgres"]);
    await card.locator("textarea.q-input").fill("DuckDB, it is already a dependency");
    await shot("the question card");
    await card.locator("textarea.q-input").press("Enter");
    await card.waitFor({ state: "detached", timeout: T });
    await chat.locator(".assistant", { hasText: "DuckDB it is" }).waitFor({ timeout: T });
    await done(chat);
    // the tool's result, which the next model request carries
    await chat.locator("details.tool[data-id=q1] > summary").click();
    await until(async () => /The user wrote: DuckDB, it is already a dependency/.test(await output(chat, "q1").innerText()),
                "the typed answer as the tool's result");
  });

  await run("Reject with reason…: the reason is the tool's result and the run goes on", async () => {
    await newSession();
    const chat = await sidebar();
    await sendIn(chat, "tidy the repository");
    await dialog.waitFor({ timeout: T });
    const labels = (await dialog.locator(".dialog-buttons .monaco-button").allInnerTexts()).map((l) => l.trim());
    for (const wanted of ["Reject with reason…", "Edit command…", "Reject and stop"])
      assert.ok(labels.includes(wanted), `the permission offers ${wanted}: ${labels.join(", ")}`);
    await shot("the permission with the steering answers");
    await answer("Reject with reason…");
    await quickInput.waitFor({ state: "visible", timeout: T });
    await quickInput.locator("input").fill("keep the build folder, CI reads it");
    await shot("the reason typed");
    await quickInput.locator("input").press("Enter");
    await chat.locator(".assistant", { hasText: "Understood: I will leave the build folder alone." }).waitFor({ timeout: T });
    await done(chat);
    await chat.locator("details.tool[data-id=b1] > summary").click();
    await until(async () => /keep the build folder, CI reads it/.test(await output(chat, "b1").innerText()), "the reason as the result");
  });

  await run("Edit command…: the edited command is what ran, and the card shows it", async () => {
    const chat = await sidebar();
    await sendIn(chat, "now print the greeting");
    await answer("Edit command…");
    const field = quickInput.locator("input");
    await field.waitFor({ state: "visible", timeout: T });
    assert.equal(await field.inputValue(), "echo from-the-agent", "the field holds pi's command");
    await field.fill("echo from-the-user");
    await shot("the command edited");
    await field.press("Enter");
    await chat.locator(".assistant", { hasText: "It printed what you chose." }).waitFor({ timeout: T });
    await done(chat);
    const block = chat.locator("details.tool[data-id=b2]");
    assert.match(await block.locator("summary").innerText(), /^bash echo from-the-user/);
    await chat.locator(".edited-note", { hasText: "You edited this command before it ran" }).waitFor({ timeout: T });
    await block.locator("summary").click();
    await until(async () => /from-the-user/.test(await output(chat, "b2").innerText()), "what ran");
    assert.doesNotMatch(await output(chat, "b2").innerText(), /from-the-agent/);
  });

  await run("Reject and stop: nothing more runs and the chat says the user stopped it", async () => {
    const chat = await sidebar();
    await sendIn(chat, "and push it");
    await answer("Reject and stop");
    await chat.locator(".run-stopped", { hasText: "You rejected the call and stopped the run" }).waitFor({ timeout: T });
    await done(chat);
    assert.equal(await chat.locator(".assistant", { hasText: "never said" }).count(), 0, "no further model request");
  });

  await run("the plan is a checklist above the input, updated live as the agent works", async () => {
    await newSession();
    const chat = await sidebar();
    await sendIn(chat, "fix the parser");
    await dialog.waitFor({ timeout: T }); // the run waits on the cat: the first plan is on screen
    const count = chat.locator("#plan .plan-count");
    await until(async () => (await count.innerText().catch(() => "")) === "0/3", "the first plan");
    assert.match(await chat.locator("#plan .plan-step.in_progress").innerText(), /Read the failing test/);
    await shot("the plan as the run waits");
    await answer("Allow once");
    await until(async () => (await count.innerText().catch(() => "")) === "1/3", "the plan updated live");
    await chat.locator(".assistant", { hasText: "the parser is next" }).waitFor({ timeout: T });
    await done(chat);
    assert.match(await chat.locator("#plan .plan-step.in_progress").innerText(), /Fix the parser's handling of empty lines/);
    const [planBottom, inputTop] = await chat.evaluate(() => [document.getElementById("plan").getBoundingClientRect().bottom,
                                                             document.getElementById("input").getBoundingClientRect().top]);
    assert.ok(planBottom <= inputTop, "the checklist sits above the input");
  });

  await run("after a window reload the checklist is back", async () => {
    await page.reload();
    await page.waitForSelector(".monaco-workbench", { timeout: T });
    const chat = await sidebar();
    await chat.locator(".user", { hasText: "fix the parser" }).waitFor({ timeout: T });
    await until(async () => (await chat.locator("#plan .plan-count").innerText().catch(() => "")) === "1/3", "the plan after the reload");
    assert.match(await chat.locator("#plan .plan-step.completed").innerText(), /Read the failing test/);
  });
} catch (error) {
  await kit.fail(error);
} finally {
  const ok = await kit.close();
  process.exit(ok ? 0 : 1);
}
