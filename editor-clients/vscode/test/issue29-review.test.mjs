// Issue #29's review and permission surfaces, against the real daemon (scripted model): a long
// command's permission prompt, the proposed text the write/edit diff shows, the Session Tree's
// conversation and its "go back" question, the resume list's lines, the Changes view's list and
// "revert run" report, and Stop keeping a command's output (in the chat's page too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";
import { openView, poster, text, useBrowser, workspace } from "../test-support/page.mjs";
import { waitFor } from "../test-support/wait.mjs";

const require = createRequire(import.meta.url);
const { PiClient, permissionPrompt } = require("../dist/rpcClient.js");
const { forkChoices, goBackPrompt, rewindTarget } = require("../dist/rewind.js");
const { sessionItem, localTime } = require("../dist/sessionList.js");
const { Review, choose, pending, toReview, revertQuestion, revertReport } = require("../dist/editorFs.js");
const PYTHON = process.env.PI_DAEMON_PYTHON || "python3";

const held = useBrowser();
const call = (id, name, args) => ({ content: [{ type: "toolCall", id, name, arguments: args }], stopReason: "toolUse" });

function daemon(dir, options = {}, args = []) {
  const env = { ...process.env, PI_DAEMON_HOME: dir };
  for (const key of Object.keys(env)) if (key.endsWith("_API_KEY")) delete env[key];
  const c = new PiClient({ command: PYTHON, cwd: dir, env, restart: false, ...options,
                           args: ["-m", "pi_daemon", "--faux-script", join(dir, "script.json"), "--model", "faux/script", ...args] });
  c.events = [];
  c.onEvent((_s, event) => c.events.push(event));
  c.settled = (n = 1) => waitFor(() => c.events.filter((e) => e.type === "agent_settled").length >= n);
  return c;
}

test("a long command's permission: short whole buttons, the whole command and the rule in the body", async () => {
  const command = `python3 -c "print('checking')" && ${Array.from({ length: 40 }, (_, i) => `echo step-${i}-of-the-long-pipeline`).join(" && ")}`;
  const dir = workspace([call("b", "bash", { command }), text("ran it")]);
  const asked = [];
  const c = daemon(dir, { onPermission: async (request) => (asked.push(request), "allow_once") });
  await c.start();
  await c.prompt("run the pipeline");
  await c.settled();
  const { message, detail, choices } = permissionPrompt(asked[0]);
  assert.ok(message.length <= 81 && message.startsWith("Run `python3"), message);
  assert.ok(detail.includes(`$ ${command}`), detail);
  // the rule for exactly this command is not the whole command a second time
  assert.equal(asked[0].remember.scope, "exact");
  assert.ok(detail.endsWith('"Allow for this session", "Always allow…", "Always reject…" remember: exactly this command'), detail);
  assert.equal(detail.split(command).length, 2, "the command is shown once");
  assert.deepEqual(choices.map((x) => x.label), ["Allow once", "Edit command…", "Allow for this session", "Always allow…", "Reject",
                                                 "Reject with reason…", "Always reject…", "Reject and stop"]);
  await c.stop();
});

test("the write/edit review diff shows exactly what the daemon then writes (its `proposed`); a rejected write leaves the file", async () => {
  const edit = { path: "notes.txt", edits: [{ oldText: "beta ", newText: "BETA" }, { oldText: "delta\n", newText: "delta\nepsilon\n" }] };
  const dir = workspace([
    call("e", "edit", edit),
    call("w", "write", { path: "new/made.txt", content: "made by pi\n" }),
    call("w2", "write", { path: "notes.txt", content: "all gone\n" }),
    call("x", "edit", { path: "notes.txt", edits: [{ oldText: "nowhere", newText: "" }] }),
    text("done"),
  ]);
  writeFileSync(join(dir, "notes.txt"), "alpha\nbeta\ngamma\ndelta\n");
  const proposed = [];
  const onPermission = async (request) => {
    proposed.push(request.proposed?.text);
    return request.toolCallId === "w2" ? "reject_once" : "allow_once";
  };
  const c = daemon(dir, { onPermission });
  await c.start();
  await c.prompt("change the notes");
  await c.settled();
  // the edit's first oldText matches only once spaces are normalised, as the daemon's edit tool does
  assert.equal(proposed[0], "alpha\nBETA\ngamma\ndelta\nepsilon\n");
  assert.equal(readFileSync(join(dir, "new/made.txt"), "utf8"), proposed[1]);
  assert.equal(proposed[2], "all gone\n");
  assert.equal(readFileSync(join(dir, "notes.txt"), "utf8"), proposed[0]); // rejected
  assert.equal(proposed[3], undefined, "an edit that would fail proposes nothing");
  await c.stop();
});

test("the Session Tree lists the conversation only; going back asks what will happen, then moves", async () => {
  const dir = workspace([call("b", "bash", { command: "echo tool-output" }), text("first answer"), text("second answer")]);
  const c = daemon(dir, {}, ["--allow", "bash"]);
  await c.start();
  await c.prompt("one");
  await c.settled();
  await c.request("setThinkingLevel", { level: "low" }); // bookkeeping entry, not shown
  await c.prompt("two");
  await c.settled(2);
  const items = await c.tree();
  assert.deepEqual(items.map((i) => [i.title, i.role, i.current]),
    [["you: one", "user", false], ["pi: first answer", "assistant", false], ["you: two", "user", false], ["pi: second answer", "assistant", true]]);
  const { entries } = await c.request("session/entries", { scope: "file" });
  const target = rewindTarget(entries, items[2].id);
  const asked = goBackPrompt(target, "user", items[2].text);
  assert.equal(asked.message, "Go back to this message?");
  assert.ok(asked.detail.includes(`just before "two"`) && asked.detail.includes("stay in the Session Tree as a branch"), asked.detail);
  assert.equal(asked.choice, "Go back");
  await c.navigate(target.entryId);
  const { messages } = await c.request("getMessages");
  assert.deepEqual(messages.filter((m) => m.role === "user" || (m.role === "assistant" && m.content.some((b) => b.type === "text")))
    .map((m) => m.content[0]?.text ?? m.content), ["one", "first answer"]);
  const after = await c.tree(); // what was left stays, as the only child: no branch point until another one
  assert.equal(after.filter((i) => i.kind === "branch").length, 0, "one child only: no fork yet");
  assert.equal(after.find((i) => i.current).title, "pi: first answer");
  const answer = goBackPrompt(rewindTarget(entries, items[1].id), "assistant", items[1].text);
  assert.ok(answer.detail.startsWith(`The conversation goes back to "first answer"`), answer.detail);
  await c.stop();
});

test("Fork from a message lists a message sent with an image by its text", async (t) => {
  const png = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAAAH0lEQVR42mO4oKBAECk4XCCIGEYNGjVo1KBRgygzCAAOOLAQB3488AAAAABJRU5ErkJggg==";
  const dir = workspace([text("a red square"), text("ok")]);
  const c = daemon(dir);
  t.after(() => c.stop());
  await c.start();
  await c.prompt("what is in this picture?", undefined, undefined, undefined, [{ type: "image", mimeType: "image/png", data: png }]);
  await c.settled();
  await c.prompt("thanks");
  await c.settled(2);
  const { entries } = await c.request("session/entries");
  const users = entries.filter((e) => e.type === "message" && e.message.role === "user");
  assert.deepEqual(forkChoices(entries), [{ label: "what is in this picture?", id: users[0].id }, { label: "thanks", id: users[1].id }]);
});

test("the resume list: a one-line title and a local time", async () => {
  const dir = workspace([text("ok")]);
  const c = daemon(dir);
  await c.start();
  const asked = `Please look at the failing test\n\n   in tests/test_parser.py and ${"explain why it fails ".repeat(6)}`;
  await c.prompt(asked);
  await c.settled();
  const { sessions } = await c.request("session/list");
  const item = sessionItem(sessions[0]);
  assert.ok(!item.label.includes("\n") && item.label.length <= 70 && item.label.endsWith("…"), item.label);
  assert.ok(item.label.startsWith("Please look at the failing test in tests/test_parser.py"), item.label);
  assert.match(item.description, /^today \d\d:\d\d · 2 messages$/);
  const now = new Date(2026, 11, 5, 18, 0);
  assert.equal(localTime(new Date(2026, 11, 5, 14, 5).toISOString(), now), "today 14:05");
  assert.equal(localTime(new Date(2026, 11, 4, 23, 59).toISOString(), now), "yesterday 23:59");
  assert.equal(localTime(new Date(2026, 11, 3, 9, 12).toISOString(), now), "Dec 3 09:12");
  assert.equal(localTime(new Date(2025, 0, 30, 7, 1).toISOString(), now), "Jan 30 2025 07:01");
  await c.stop();
});

test("Changes: an accepted or reverted hunk leaves the list; revert run asks with the counts and reports", async () => {
  const lines = Array.from({ length: 30 }, (_, n) => `line ${n + 1}\n`);
  const changed = [...lines];
  changed[1] = "line two\n"; changed[14] = "line fifteen\n"; changed[27] = "line twenty-eight\n";
  const dir = workspace([call("w", "write", { path: "f.txt", content: changed.join("") }),
                         call("w2", "write", { path: "g.txt", content: "new\n" }), text("ok")]);
  writeFileSync(join(dir, "f.txt"), lines.join(""));
  writeFileSync(join(dir, "g.txt"), "old\n");
  const c = daemon(dir, {}, ["--yes"]);
  const review = new Review(c);
  await c.start();
  await c.prompt("change two files");
  await c.settled();
  const hunks = (await review.load()).files.find((f) => f.path === "f.txt").hunks;
  await review.accept("f.txt", [hunks[0].id]);
  await review.revert(choose("f.txt", [hunks[1].id]));
  const listed = toReview(review.current);
  assert.deepEqual(listed.map((f) => [f.path, f.hunks.map((h) => h.id)]), [["f.txt", [hunks[2].id]], ["g.txt", [listed[1].hunks[0].id]]]);
  const asked = revertQuestion(review.current);
  assert.equal(asked.message, `Revert run ${review.current.runId}?`);
  assert.ok(asked.detail.startsWith("2 hunks in 2 files go back") && asked.detail.includes("• f.txt (1 hunk)"), asked.detail);
  writeFileSync(join(dir, "g.txt"), "changed by someone else\n");
  const result = await review.revert(pending(review.current));
  assert.equal(revertReport(result), "pi: reverted 1 hunk in 1 file; left alone (changed since): "
    + result.conflicts.map((x) => `${x.path}: ${x.reason}`).join("; "));
  assert.deepEqual(result.conflicts.map((x) => x.path), ["g.txt"]);
  assert.ok(readFileSync(join(dir, "f.txt"), "utf8").includes("line two\nline 3") && readFileSync(join(dir, "f.txt"), "utf8").includes("line 28\n"));
  assert.deepEqual(toReview(review.current).map((f) => f.path), ["g.txt"]); // only the conflict is left to review
  await c.stop();
});

test("Stop keeps the output the command had streamed, and the chat shows it marked stopped", async () => {
  const command = "for i in $(seq 1 400); do echo progress-line-$i; sleep 0.05; done";
  const dir = workspace([call("b", "bash", { command }), text("never")]);
  const c = daemon(dir, {}, ["--allow", "bash"]);
  const page = await openView(held.browser, 700);
  const post = poster(page);
  c.onEvent((_s, event) => post({ type: "event", event }));
  await c.start();
  await c.prompt("run the long command");
  await waitFor(() => c.events.some((e) => e.type === "tool_execution_update"
    && e.partialResult.content.map((b) => b.text).join("").includes("progress-line-5")));
  await c.abort();
  await c.settled();
  const end = c.events.find((e) => e.type === "tool_execution_end");
  const out = end.result.content.map((b) => b.text).join("");
  assert.equal(end.isError, true);
  assert.ok(out.includes("progress-line-5\n") && out.trimEnd().endsWith("[stopped by the user]"), out);
  const tool = page.locator(".tool.stopped");
  await tool.waitFor();
  assert.match(await tool.locator("summary").innerText(), /\(stopped\)$/);
  await tool.locator("summary").click();
  const shown = await tool.locator(":scope > .output").innerText();
  assert.ok(shown.includes("progress-line-5") && shown.includes("[stopped by the user]"), shown);
  await c.stop(); // first: an event the daemon sends until it ends is forwarded to the page
  await page.close();
});

test("the chat's card for a write/edit under review: under its call, answers posted back, gone once answered", async () => {
  const dir = workspace([call("w", "write", { path: "made.txt", content: "x\n" }), text("done")]);
  const page = await openView(held.browser, 700);
  let ask;
  const c = daemon(dir, { onPermission: (request, cancelled) => new Promise((resolve) => {
    ask = { request, resolve };
    cancelled.then(() => resolve("cancelled"));
  }) });
  const post = poster(page);
  c.onEvent((_s, event) => post({ type: "event", event }));
  await c.start();
  await c.prompt("write it");
  await waitFor(() => ask);
  await page.locator("details.tool", { hasText: "write made.txt" }).waitFor();
  await page.evaluate((m) => window.postMessage(m, "*"),
                      { type: "permission", ask: { sessionId: ask.request.sessionId, toolCallId: ask.request.toolCallId, toolName: "write", path: "made.txt" } });
  const card = page.locator("details.tool + .permission");
  await card.waitFor();
  assert.equal(await card.locator(".said").innerText(), "pi wants to write made.txt: review the diff in the editor; revert hunks or edit its right side, then Accept.");
  assert.deepEqual(await card.locator("button").allInnerTexts(), ["Accept", "Reject", "Reject with reason…", "Reject and stop", "More…", "Show diff"]);
  await card.getByRole("button", { name: "Accept", exact: true }).click();
  const posted = await page.evaluate(() => window.posted.filter((m) => m.type === "permissionAnswer"));
  assert.deepEqual(posted, [{ type: "permissionAnswer", sessionId: ask.request.sessionId, toolCallId: ask.request.toolCallId, answer: "accept" }]);
  ask.resolve("allow_once");
  await page.evaluate((m) => window.postMessage(m, "*"), { type: "permissionDone", sessionId: ask.request.sessionId, toolCallId: ask.request.toolCallId });
  await card.waitFor({ state: "detached" });
  await c.settled();
  assert.equal(readFileSync(join(dir, "made.txt"), "utf8"), "x\n");
  await c.stop(); // first: an event the daemon sends until it ends is forwarded to the page
  await page.close();
});

test("a review left unanswered: the daemon withdraws it after its timeout, the handler learns so, nothing is written", async () => {
  const dir = workspace([call("w", "write", { path: "late.txt", content: "x\n" }), text("not written")]);
  let withdrawn = false;
  const c = daemon(dir, { onPermission: (_request, cancelled) => {
    cancelled.then(() => { withdrawn = true; });
    return new Promise(() => {}); // the user closed the diff and never answered
  } }, ["--permission-timeout", "1"]);
  await c.start();
  await c.prompt("write late");
  await c.settled();
  assert.equal(withdrawn, true);
  assert.ok(c.events.some((e) => e.type === "permission_timeout"));
  assert.throws(() => readFileSync(join(dir, "late.txt")));
  await c.stop();
});

test("a changed file the daemon could not read is listed as not restorable, with why", () => {
  const current = { runId: "r1", files: [
    { path: "big.bin", status: "modified", diff: "", hunks: [], reason: "too large to diff (12 GiB; the limit is 16 MiB)" },
    { path: "a.txt", status: "modified", diff: "", hunks: [{ id: "h1", header: "@@ -1 +1 @@", accepted: false }] }] };
  const asked = revertQuestion(current);
  assert.ok(asked.detail.includes("• big.bin (not restorable: too large to diff (12 GiB; the limit is 16 MiB))"), asked.detail);
  assert.ok(asked.detail.includes("• a.txt (1 hunk)"), asked.detail);
});
