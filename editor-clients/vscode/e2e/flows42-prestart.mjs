// Issue #42's VS Code flow: the daemon is started when a workspace where pi was used opens, before the user
// opens the chat, so their first prompt does not wait for a spawn; a workspace where pi was never used starts
// nothing, nor does a cloned repository that carries a .pi/sessions folder of its own ("used" is the user's
// record, the extension's workspaceState, never the folder's). Both connections: "child" (the window's own
// daemon) and "attach" (the workspace's server, started if none runs). The model is a loopback server speaking
// the OpenAI stream. A prompt typed as soon as a reopened chat is live, its last conversation still loading,
// is answered in that conversation, not given back into the input. Screenshots prefixed "prestart42-".
//
// "Nothing started" is watched for NOTHING_MS after the extension has decided (its status item is shown, in the
// same step as the decision), and the used workspace's daemon must have come within that bound in the same run.
//
//   node e2e/flows42-prestart.mjs <cache folder from e2e/install.sh>   (env: PI_DAEMON_PYTHON, PI_E2E_OUT)
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { launch, until } from "./harness.mjs";
import { serverPids } from "../test-support/servers.mjs";
import { chatLive, closeWindow, daemonSettings, daemonsIn, noneWithin, quickModelServer, writeModels } from "./prestart.mjs";

const here = resolve(new URL(".", import.meta.url).pathname);
const cache = process.argv[2] ?? join(process.env.HOME, ".cache", "pi-daemon-e2e");
const out = resolve(process.env.PI_E2E_OUT ?? join(here, "..", "e2e-output"));
const NOTHING_MS = 10_000;

const model = await quickModelServer();

// The extension has run its activation (and with it the decision to start early or not): its status item.
const decided = (kit) => kit.page.locator(".statusbar-item", { hasText: "π" }).first().waitFor({ timeout: kit.T });
const explorer = (kit) => kit.page.locator(".activitybar .action-item a[aria-label^='Explorer']").first().click({ timeout: kit.T });
const answered = (kit, token) => kit.chat().locator(".assistant", { hasText: `${token} is the answer.` }).waitFor({ timeout: kit.T });

async function flow(connection) {
  const kit = await launch({
    cache, out, prefix: `prestart42-${connection}-`,
    prepare: (root) => {
      writeModels(root, model.url);
      // a repository as cloned: its own .pi/sessions with a session in it, as if pi had been used there
      const cloned = join(root, "cloned");
      mkdirSync(join(cloned, ".pi", "sessions"), { recursive: true });
      writeFileSync(join(cloned, ".pi", "sessions", "2026-01-01_session.jsonl"),
                    JSON.stringify({ type: "session", id: "s1", cwd: cloned, timestamp: "2026-01-01T00:00:00Z" }) + "\n");
      writeFileSync(join(cloned, "README.md"), "a cloned project\n");
    },
    settings: () => daemonSettings(connection),
  });
  const { run } = kit;
  const running = () => [...daemonsIn(kit.work), ...serverPids(kit.runtime)];
  try {
    await kit.open();
    await run(`${connection}: a workspace where pi was never used opens: nothing is started`, async () => {
      await decided(kit);
      await noneWithin(running, NOTHING_MS, "a daemon started in a workspace where pi was never used");
    });
    await run(`${connection}: the user opens the chat and asks: the daemon starts, the answer comes`, async () => {
      await kit.openChat("loop/quick");
      await chatLive(kit);
      await kit.send("say k1");
      await answered(kit, "k1");
      await explorer(kit); // the window is left on the Explorer: it reopens there, the chat not shown
    });
    let early;
    await run(`${connection}: the window closed and the same workspace opened: the daemon is up before the chat is opened`, async () => {
      await closeWindow(kit, kit.work, ["pi.used", "pi.chatSession"]);
      await kit.open();
      await decided(kit);
      const from = Date.now();
      await until(() => (connection === "attach" ? serverPids(kit.runtime) : daemonsIn(kit.work)).length,
                  "the daemon started when the used workspace opened", NOTHING_MS);
      early = Date.now() - from;
      assert.equal(await kit.page.locator(".activitybar .action-item.checked a[aria-label^='Explorer']").count(), 1,
                   "the Explorer is shown, not the chat");
      await kit.page.locator(".statusbar-item", { hasText: "π loop/quick" }).waitFor({ timeout: kit.T });
    });
    await run(`${connection}: the chat opened shows the last conversation, ready; a prompt is answered by the running daemon`, async () => {
      const before = running();
      await kit.openChat("loop/quick");
      await kit.chat().locator(".user", { hasText: "say k1" }).waitFor({ timeout: kit.T });
      await chatLive(kit);
      await kit.shot(`${connection}: the used workspace's chat opened, ready`);
      await kit.send("say k2");
      await answered(kit, "k2");
      assert.deepEqual(running(), before, "the daemon started early is the one that answered");
    });
    await run(`${connection}: reopened, the chat opened at once and a prompt typed at once (the last conversation still loading): it is answered, not given back`, async () => {
      await closeWindow(kit);
      await kit.open();
      await kit.openChat();
      await chatLive(kit);
      await kit.send("say k3");
      await answered(kit, "k3");
      assert.equal(await kit.chat().locator("#input").inputValue(), "", "the prompt is not back in the input");
      await kit.chat().locator(".user", { hasText: "say k1" }).waitFor({ timeout: kit.T }); // the conversation restored
      assert.equal(await kit.chat().locator(".user", { hasText: "say k3" }).count(), 1);
    });
    await run(`${connection}: a cloned repository with its own .pi/sessions opens: nothing is started`, async () => {
      await closeWindow(kit);
      const cloned = join(kit.root, "cloned");
      await kit.open(cloned);
      await decided(kit);
      await noneWithin(() => [...daemonsIn(cloned), ...serverPids(kit.runtime)], NOTHING_MS,
                       "a daemon started for a repository's own .pi/sessions");
    });
    console.log(`${connection}: the used workspace's daemon was up ${early} ms after the extension decided (bound ${NOTHING_MS} ms)`);
  } catch (error) {
    await kit.fail(error);
  }
  return kit.close();
}

let ok = false;
try {
  ok = (await flow("child")) & (await flow("attach"));
} finally {
  model.server.close();
}
console.log(`screenshots in ${out}`);
process.exit(ok ? 0 : 1);
