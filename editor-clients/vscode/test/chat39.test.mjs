// Issue #39's chat page in a real browser (the system's Chromium, headless), fed with the real daemon's
// events as the extension forwards them: the agent's plan as a checklist pinned above the input (live, back
// after the session is loaded again, as it stood after a rewind), the agent's questions as a card whose answer
// (typed words, options) is what the tool returns to the model and which goes when the run is stopped, and
// permission answers that steer: a refusal with a reason the model reads while the run goes on, an edited
// command that is what ran (the card shows it), and "Reject and stop" ending the run, said in the chat.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { openView as openPage, pageDaemon as daemon, text, useBrowser, workspace as pageWorkspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { UserQuestions } = require("../dist/userQuestions.js");
const { permissionPrompt } = require("../dist/rpcClient.js");

const held = useBrowser();
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });
const workspace = (replies, options = {}) => pageWorkspace(replies, options, "pi-39-");
const posted = (page, type) => page.evaluate((t) => window.posted.filter((m) => m.type === t), type);
const steps = (page) => page.locator("#plan .plan-step").evaluateAll((items) => items.map((i) => `${i.dataset.status}:${i.textContent}`));
const toolResult = (c, id) => c.events.map((e) => e.event).find((e) => e.type === "tool_execution_end" && e.toolCallId === id);
const resultText = (end) => (end?.result?.content ?? []).map((b) => b.text ?? "").join("");

// A permission answered by the test when it chooses (the run waits on it meanwhile).
function permissionGate() {
  const asked = [];
  return {
    asked,
    onPermission: (request) => new Promise((resolve) => asked.push({ request, answer: resolve })),
    next: (n) => waitFor(() => asked[n], `permission request ${n + 1}`),
  };
}

test("the plan is a checklist pinned above the input: live, folded once all done, back after a reload, as it stood after a rewind", async (t) => {
  const plan = (statuses) => ["Read the failing test", "Fix the parser", "Run the tests"].map((step, i) => ({ step, status: statuses[i] }));
  const dir = workspace([
    call("p1", "update_plan", { explanation: "Three steps to a green suite.", plan: plan(["in_progress", "pending", "pending"]) }),
    call("b1", "bash", { command: "echo reading" }),
    call("p2", "update_plan", { plan: plan(["completed", "completed", "in_progress"]) }),
    call("p3", "update_plan", { plan: plan(["completed", "completed", "completed"]) }),
    text("All three steps are done."),
    text("A second answer."),
  ]);
  const page = await openPage(held.browser, 600);
  const gate = permissionGate();
  const c = await daemon(dir, page, [], { onPermission: gate.onPermission });
  t.after(() => Promise.all([c.stop(), page.close()]));
  assert.equal(await page.locator("#plan").isVisible(), false, "no plan: no checklist");

  await c.prompt("fix the parser");
  const first = await gate.next(0); // the run waits on the bash call: the first plan is on screen
  await waitFor(async () => (await steps(page)).length === 3, "the checklist");
  assert.deepEqual(await steps(page), ["in_progress:▸Read the failing test", "pending:○Fix the parser", "pending:○Run the tests"]);
  assert.equal(await page.locator("#plan .plan-count").textContent(), "0/3");
  assert.equal(await page.locator("#plan .plan-why").textContent(), "Three steps to a green suite.");
  assert.equal(await page.locator("details.tool[data-id=p1] > summary").textContent(), "update_plan 0/3 done · Read the failing test",
               "the call's title says the plan's progress");
  const [planBottom, inputTop] = await page.evaluate(() => [document.getElementById("plan").getBoundingClientRect().bottom,
                                                            document.getElementById("input").getBoundingClientRect().top]);
  assert.ok(planBottom <= inputTop, "the checklist is above the input");
  assert.ok(await page.evaluate(() => document.getElementById("bar").contains(document.getElementById("plan"))), "pinned with the input, not in the log");
  first.answer("allow_once");

  await waitFor(async () => (await page.locator("#plan .plan-count").textContent()) === "3/3", "the plan all done");
  await c.settled();
  assert.equal(await page.locator("#plan").evaluate((d) => d.open), false, "all done: folded to its head");
  assert.equal(await page.locator("#plan .plan-why").count(), 0, "the last call gave no explanation");
  await page.click("#plan > summary");
  assert.deepEqual(await steps(page), ["completed:✓Read the failing test", "completed:✓Fix the parser", "completed:✓Run the tests"]);

  // the chat drawn again from the session (a window reload): session/load replays the plan
  const { sessionId } = await c.request("getState");
  await page.evaluate(() => window.postMessage({ type: "reset" }, "*"));
  await waitFor(async () => !(await page.locator("#plan").isVisible()), "the reset page without a plan");
  await c.load(sessionId);
  await waitFor(() => c.events.some((e) => e.event.type === "replay_end"), "the replay");
  await waitFor(async () => (await page.locator("#plan .plan-count").textContent().catch(() => "")) === "3/3", "the plan back after a reload");

  // rewound to the bash call's result: the plan as it stood then
  const { entries } = await c.request("session/entries", { scope: "file" });
  const bashResult = entries.find((e) => e.type === "message" && e.message?.role === "toolResult" && e.message.toolCallId === "b1");
  await c.navigate(bashResult.id);
  await waitFor(async () => (await page.locator("#plan .plan-count").textContent().catch(() => "")) === "0/3", "the plan as it stood at the entry");
  assert.equal(await page.locator("#plan").evaluate((d) => d.open), true, "a plan not done shows its steps again");
  // back before the first message: no plan
  const firstUser = entries.find((e) => e.type === "message" && e.message?.role === "user");
  await c.request("session/rewind", { entryId: firstUser.id });
  await waitFor(async () => !(await page.locator("#plan").isVisible()), "no plan before the first call");
});

test("a question is a card under its call: typed words are the tool's result the model reads; options; Stop withdraws it", async (t) => {
  const dir = workspace([
    call("q1", "ask_user", { question: "Which database should the cache use?", allowText: true,
                             options: [{ label: "SQLite", description: "a file next to the app" }, { label: "Postgres" }] }),
    text("DuckDB it is."),
    call("q2", "ask_user", { question: "Which checks should run?", multiSelect: true,
                             options: [{ label: "lint" }, { label: "types" }, { label: "tests" }] }),
    text("Running lint and tests."),
    call("q3", "ask_user", { question: "Shall I go on? <b>now</b>", options: [{ label: '<img src=x onerror="window.pwned=1">' }, { label: "no" }] }),
    text("never said"),
  ]);
  const page = await openPage(held.browser, 700);
  let c;
  const questions = new UserQuestions((_sessionId, message) => c.toPage(message));
  c = await daemon(dir, page, [], { onAskUser: (request, cancelled) => questions.ask(request, cancelled) });
  t.after(() => Promise.all([c.stop(), page.close()]));
  const answered = async (n) => { // the page's answer goes to the extension, as extension.ts routes it
    const answer = await waitFor(async () => (await posted(page, "questionAnswer"))[n], "the page's answer");
    questions.answer(answer.sessionId, answer.toolCallId, answer.result);
    return answer.result;
  };

  await c.prompt("add a cache");
  const card = page.locator(".question[data-id=q1]");
  await card.waitFor();
  assert.equal(await card.locator(".q-text").textContent(), "Which database should the cache use?");
  assert.deepEqual(await card.locator("button.q-option .q-label").allTextContents(), ["SQLite", "Postgres"]);
  assert.equal(await card.locator("button.q-option .q-desc").first().textContent(), "a file next to the app");
  assert.ok(await page.evaluate(() => document.querySelector("details.tool[data-id=q1]").nextElementSibling.matches(".question")),
            "the card is under its call");
  assert.equal(await page.evaluate(() => document.activeElement?.textContent), "SQLitea file next to the app", "the first option has the focus");
  await card.locator("textarea.q-input").fill("DuckDB, it is already a dependency");
  await card.locator("textarea.q-input").press("Enter");
  assert.deepEqual(await answered(0), { outcome: "answered", text: "DuckDB, it is already a dependency" });
  await card.waitFor({ state: "detached" });
  await waitFor(() => toolResult(c, "q1"), "the question's result");
  assert.match(resultText(toolResult(c, "q1")), /The user wrote: DuckDB, it is already a dependency/, "the typed words are what the model reads");
  await page.locator("details.tool[data-id=q1] .output", { hasText: "DuckDB, it is already a dependency" }).waitFor({ state: "attached" });
  await page.locator("details.tool[data-id=q1] + .answer-note", { hasText: "The user wrote: DuckDB" }).waitFor(); // in sight, the call folded
  await page.locator(".assistant", { hasText: "DuckDB it is." }).waitFor();
  await c.settled(undefined, 1);

  await c.prompt("and check it");
  const multi = page.locator(".question[data-id=q2]");
  await multi.waitFor();
  assert.equal(await multi.locator("textarea").count(), 0, "no text field when the agent takes none");
  await multi.locator("label.q-option", { hasText: "lint" }).click();
  await multi.locator("label.q-option", { hasText: "tests" }).click();
  await multi.locator("button.q-submit").click();
  assert.deepEqual(await answered(1), { outcome: "answered", selected: ["lint", "tests"] });
  await waitFor(() => toolResult(c, "q2"), "the second result");
  assert.match(resultText(toolResult(c, "q2")), /The user answered: lint, tests/);
  await c.settled(undefined, 2);

  await c.prompt("go on");
  const third = page.locator(".question[data-id=q3]");
  await third.waitFor();
  // the model's words are text, never markup
  assert.equal(await third.locator(".q-text").textContent(), "Shall I go on? <b>now</b>");
  assert.equal(await third.locator("img, b").count(), 0);
  assert.equal(await page.evaluate(() => window.pwned), undefined);
  await c.abort(); // Stop while the question waits: withdrawn, the run ends
  await third.waitFor({ state: "detached" });
  await c.settled(undefined, 3);
  assert.equal(c.events.filter((e) => e.event.type === "agent_settled").at(-1).event.aborted, true, "the run ended aborted");
  assert.equal(await page.locator(".question").count(), 0);
  assert.ok(!(await page.locator(".assistant", { hasText: "never said" }).count()));
});

test("permission answers that steer: a reason the model reads while the run goes on, an edited command is what ran, Reject and stop ends the run", async (t) => {
  const dir = workspace([
    call("b1", "bash", { command: "rm -rf build" }),
    text("Understood, I will keep the build folder."),
    call("b2", "bash", { command: "echo from-the-agent" }),
    text("It printed what you chose."),
    call("b3", "bash", { command: "git push --force" }),
    text("never said"),
  ]);
  const page = await openPage(held.browser, 700);
  const gate = permissionGate();
  const c = await daemon(dir, page, [], { onPermission: gate.onPermission });
  t.after(() => Promise.all([c.stop(), page.close()]));

  // the choices every permission offers (the modal and its follow-ups: extension's askModal)
  const first = await (async () => { await c.prompt("clean up"); return gate.next(0); })();
  const labels = permissionPrompt(first.request).choices.map((ch) => [ch.label, ch.outcome, ch.follow ?? ""]);
  for (const wanted of [["Reject with reason…", "reject_once", "reason"], ["Reject and stop", "reject_and_stop", ""],
                        ["Edit command…", "allow_once", "edit"]])
    assert.ok(labels.some((l) => JSON.stringify(l) === JSON.stringify(wanted)), `offers ${wanted[0]}: ${JSON.stringify(labels)}`);

  first.answer({ outcome: "reject_once", reason: "keep the build folder, CI reads it" });
  await waitFor(() => toolResult(c, "b1"), "the refused call's result");
  assert.match(resultText(toolResult(c, "b1")), /keep the build folder, CI reads it/, "the reason is the tool's result");
  await page.locator(".assistant", { hasText: "Understood, I will keep the build folder." }).waitFor(); // the run went on
  assert.equal(await page.locator("details.tool[data-id=b1] > summary").textContent(), "bash rm -rf build (rejected)", "refused, not failed");
  await c.settled(undefined, 1);

  await c.prompt("print the greeting");
  const second = await gate.next(1);
  second.answer({ outcome: "allow_once", editedArgs: { ...second.request.args, command: "echo from-the-user" } });
  const block = page.locator("details.tool[data-id=b2]");
  await page.locator(".edited-note").waitFor();
  assert.match(await page.locator(".edited-note").textContent(), /You edited this command before it ran/);
  await waitFor(async () => (await block.locator("summary").textContent()).startsWith("bash echo from-the-user"), "the card showing what ran");
  await waitFor(() => toolResult(c, "b2"), "the edited call's result");
  assert.match(resultText(toolResult(c, "b2")), /from-the-user/);
  assert.doesNotMatch(resultText(toolResult(c, "b2")), /from-the-agent/);
  await page.locator("details.tool[data-id=b2] .output", { hasText: "from-the-user" }).waitFor({ state: "attached" });
  await c.settled(undefined, 2);
  // drawn again from the session (a reload): the call as it ran, marked edited
  const { sessionId } = await c.request("getState");
  await page.evaluate(() => window.postMessage({ type: "reset" }, "*"));
  await c.load(sessionId);
  await waitFor(() => c.events.some((e) => e.event.type === "replay_end"), "the replay");
  await waitFor(async () => (await block.locator("summary").textContent().catch(() => "")).startsWith("bash echo from-the-user"),
                "the replayed call as it ran");
  await page.locator("details.tool[data-id=b2] + .edited-note").waitFor();

  await c.prompt("push it");
  const third = await gate.next(2);
  third.answer({ outcome: "reject_and_stop" });
  await c.settled(undefined, 3);
  const settled = c.events.filter((e) => e.event.type === "agent_settled").at(-1).event;
  assert.equal(settled.stopReason, "rejected");
  await page.locator(".run-stopped", { hasText: "You rejected the call and stopped the run" }).waitFor();
  assert.equal(await page.locator("details.tool[data-id=b3] > summary").textContent(), "bash git push --force (rejected)");
  assert.equal(await page.locator(".assistant", { hasText: "never said" }).count(), 0, "no further model request");
  assert.equal(gate.asked.length, 3);
});

test("a write's review card in the chat: Reject with reason… opens a field whose words are sent; Reject and stop is offered", async (t) => {
  const page = await openPage(held.browser, 500);
  t.after(() => page.close());
  const ask = { sessionId: "s1", toolCallId: "w1", toolName: "write", path: "notes.txt" };
  await page.evaluate((a) => window.postMessage({ type: "permission", ask: a }, "*"), ask);
  const card = page.locator(".permission[data-id=w1]");
  await card.waitFor();
  assert.deepEqual(await card.locator(".answers button").allTextContents(),
                   ["Accept", "Reject", "Reject with reason…", "Reject and stop", "More…", "Show diff"]);
  await card.locator("button", { hasText: "Reject with reason…" }).click();
  assert.equal(await page.evaluate(() => document.activeElement?.className), "reason-text", "the field has the focus");
  assert.equal((await posted(page, "permissionAnswer")).length, 0, "nothing sent before the reason");
  await card.locator(".send-reason").click();
  assert.equal((await posted(page, "permissionAnswer")).length, 0, "an empty reason sends nothing");
  await card.locator("textarea.reason-text").fill("write it under docs/ instead");
  await card.locator("textarea.reason-text").press("Enter");
  await card.locator("button", { hasText: "Reject and stop" }).click();
  assert.deepEqual((await posted(page, "permissionAnswer")).map(({ answer, reason }) => [answer, reason ?? null]),
                   [["reject", "write it under docs/ instead"], ["stop", null]]);
});
