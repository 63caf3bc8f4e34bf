// Issue #42's bench in the real host (code-server in headless Chromium): keypress → first glyph of the answer.
// The model is a loopback server speaking the OpenAI stream (prestart.mjs), answering at once, so what is
// measured is the editor, the extension and the daemon. The clock is the chat page's own: the Enter keydown's
// event timestamp in the chat input, to the first glyph of the new answer in the page (a MutationObserver) and
// the animation frame after it (the frame that paints it); both performance.now(), so the error is that of the
// page's clock (well under 1 ms) plus at most a frame for the paint after that frame starts (~17 ms).
//
// Each run opens two workspaces, one after the other (their order alternating):
//   used   — pi was used there before (the chat opened, a prompt answered, the window left on the Explorer);
//   fresh  — pi was never used there (a new folder each run).
// In each: the window opens, the user waits --pause ms (reads the workbench), opens the chat (π in the
// activity bar), and as soon as its page is live (its script running) types a prompt and presses Enter (COLD); once it is
// answered, a second prompt (WARM). The window is closed and its daemon waited for to end (in attach mode the
// workspace's server is stopped too), so each COLD is a window's first prompt.
// With this build the used workspace's daemon is started when the window opens; with an older build given as
// PI_E2E_VSIX (bench/vscode_glyph.py --against REV) nothing is started before the chat opens.
//
//   node e2e/bench42-glyph.mjs <cache> [--runs 5] [--pause 8000] [--connection child|attach]
//   (env: PI_DAEMON_PYTHON, PI_E2E_OUT, PI_E2E_VSIX); prints one JSON line last: {used: {cold, warm}, fresh: …}
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { chatFrames, launch } from "./harness.mjs";
import { serverPids } from "../test-support/servers.mjs";
import { armGlyphTimer, chatLive, closeWindow, daemonSettings, daemonsIn, glyphTime, quickModelServer, writeModels } from "./prestart.mjs";

const { values: options, positionals } = parseArgs({ allowPositionals: true, options: {
  runs: { type: "string", default: "5" }, pause: { type: "string", default: "8000" },
  connection: { type: "string", default: "child" } } });
const here = resolve(new URL(".", import.meta.url).pathname);
const cache = positionals[0] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));
const runs = Number(options.runs);
const pause = Number(options.pause);

const model = await quickModelServer();
const kit = await launch({ cache, out, prefix: "glyph42-", prepare: (root) => writeModels(root, model.url),
                           settings: () => daemonSettings(options.connection) });
const { page, T } = kit;
const explorer = () => page.locator(".activitybar .action-item a[aria-label^='Explorer']").first().click({ timeout: T });
let asked = 0;

// One prompt typed and sent in the side bar's chat: ms from the Enter keydown to its answer's first glyph.
async function prompt() {
  const token = `k${++asked}`;
  const [frame] = await chatFrames(page, "sidebar");
  await armGlyphTimer(frame, token);
  const input = kit.chat().locator("#input");
  await input.fill(`say ${token}`);
  await input.press("Enter");
  const glyph = await glyphTime(frame).catch(async (error) => { // what the user would see instead
    const typed = await input.inputValue().catch(() => "?");
    const toasts = await page.locator(".notification-toast").allInnerTexts().catch(() => []);
    throw new Error(`${error.message}; the input holds ${JSON.stringify(typed)}; notifications: ${JSON.stringify(toasts)}`);
  });
  await kit.chat().locator(".assistant", { hasText: `${token} is the answer.` }).waitFor({ timeout: T });
  return glyph;
}

// A window on `folder`: the user's pause, the chat opened, the COLD prompt, the WARM one; left on the Explorer.
async function session(folder) {
  await kit.open(folder);
  // when the daemon came, in ms after the workbench was drawn (sampled every 50 ms)
  const opened = Date.now();
  let up;
  const sampler = setInterval(() => {
    up ??= daemonsIn(folder).length || serverPids(kit.runtime).length ? Date.now() - opened : undefined;
  }, 50);
  await new Promise((r) => setTimeout(r, pause)); // the user, not an outcome: nothing is waited for here
  const upBefore = up !== undefined;
  const chatAt = Date.now() - opened;
  await kit.openChat();
  await chatLive(kit); // as soon as the user can type into it
  const cold = await prompt();
  clearInterval(sampler);
  const warm = await prompt();
  await explorer();
  await closeWindow(kit, folder);
  return { cold, warm, upBefore, up, chatAt };
}

const results = { used: [], fresh: [] };
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
try {
  // pi used in the project once: the chat opened, a prompt answered, the window left on the Explorer
  await kit.open();
  await kit.openChat("loop/quick");
  await chatLive(kit);
  await prompt();
  await explorer();
  await closeWindow(kit, kit.work, ["pi.used", "pi.chatSession"]);
  for (let run = 1; run <= runs; run++) {
    const fresh = join(kit.root, `fresh-${run}`);
    mkdirSync(fresh);
    const order = run % 2 ? ["used", "fresh"] : ["fresh", "used"];
    for (const which of order) {
      const result = await session(which === "used" ? kit.work : fresh);
      results[which].push(result);
      const { cold, warm, up, chatAt } = result;
      console.log(`run ${run} ${which}: cold ${cold.frame.toFixed(0)} ms (prompt shown ${cold.echo?.toFixed(0)}), ` +
                  `warm ${warm.frame.toFixed(0)} ms (${warm.echo?.toFixed(0)}); daemon up ${up} ms after the window, ` +
                  `chat clicked at ${chatAt} ms`);
    }
    if (run === 1) await kit.shot("after the first run");
  }
} catch (error) {
  await kit.fail(error);
} finally {
  model.server.close();
}
const ok = await kit.close();
const summary = {};
for (const [which, list] of Object.entries(results)) {
  if (!list.length) continue;
  summary[which] = { runs: list.length, upBefore: list.filter((r) => r.upBefore).length,
                     up: median(list.map((r) => r.up ?? Infinity)) };
  for (const kind of ["cold", "warm"]) summary[which][kind] = {
    frame: median(list.map((r) => r[kind].frame)), mutation: median(list.map((r) => r[kind].mutation)),
    echo: median(list.map((r) => r[kind].echo ?? NaN)),
    all: list.map((r) => Math.round(r[kind].frame)) };
}
console.log(JSON.stringify({ connection: options.connection, pause, ...summary }));
process.exit(ok ? 0 : 1);
