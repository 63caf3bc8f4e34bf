// Issue #42's pieces shared by the pre-start flow (flows42-prestart.mjs) and the keypress → first glyph bench
// (bench42-glyph.mjs): a loopback model server speaking the OpenAI stream, the daemons working in a folder (by
// process), the project settings that name it, and the in-page timer of the first glyph of an answer.
import { readFileSync, readlinkSync, readdirSync, mkdirSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { python, until } from "./harness.mjs";
import { serverPids } from "../test-support/servers.mjs";

// An OpenAI-compatible server answering at once: the prompt's token (a word like "k17") first, as its own
// delta, then a few words. `requests` counts the answers asked for.
export function quickModelServer() {
  const state = { requests: 0 };
  const server = createServer((request, response) => {
    if (request.method === "GET" && request.url === "/v1/models") {
      response.writeHead(200, { "content-type": "application/json" });
      return response.end(JSON.stringify({ object: "list", data: [{ id: "quick", object: "model" }] }));
    }
    if (request.method !== "POST" || request.url !== "/v1/chat/completions") return response.writeHead(404).end();
    let body = "";
    request.on("data", (d) => (body += d));
    request.on("end", () => {
      state.requests++;
      const messages = JSON.parse(body).messages;
      const last = messages[messages.length - 1];
      const said = typeof last.content === "string" ? last.content : last.content.map((b) => b.text ?? "").join("");
      const token = said.match(/\bk\d+\b/)?.[0] ?? "ok";
      const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk",
        created: 0, model: "quick", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      response.writeHead(200, { "content-type": "text/event-stream" });
      for (const piece of [token, " is", " the", " answer."]) response.write(chunk({ content: piece }));
      response.write(chunk({}, "stop"));
      response.end("data: [DONE]\n\n");
    });
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () =>
    ok({ server, state, url: `http://127.0.0.1:${server.address().port}/v1` })));
}

// The user's models.json (in the run's PI_DAEMON_HOME) naming the loopback server as the model "loop/quick".
export function writeModels(root, url) {
  mkdirSync(join(root, "home"), { recursive: true });
  writeFileSync(join(root, "home", "models.json"), JSON.stringify({ providers: { loop: {
    baseUrl: url, api: "openai-completions", models: [{ id: "quick", contextWindow: 32000, maxTokens: 4000 }] } } }));
}

export const daemonSettings = (connection) =>
  ({ "pi.command": python, "pi.args": ["-m", "pi_daemon", "--model", "loop/quick"], "pi.connection": connection });

// The pi-daemon processes working in `folder` (their working folder; a child-mode daemon's and an attach
// bridge's), without their own helpers (a child with the same command line).
export function daemonsIn(folder) {
  const pids = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").includes("pi_daemon")) continue;
      if (readlinkSync(`/proc/${name}/cwd`) === folder) pids.push(Number(name));
    } catch {} // gone meanwhile, or not ours to read
  }
  const parent = (pid) => Number(readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")[1]);
  return pids.filter((pid) => { try { return !pids.includes(parent(pid)); } catch { return false; } });
}

// Waits (bounded) until no process of `pids` is alive.
export const gone = (pids, what) => until(() => pids.every((pid) => {
  try { process.kill(pid, 0); return false; } catch { return true; }
}), what);

// In the chat page (`frame`): from the next Enter keydown in its input (the event's own timestamp) to the first
// glyph of a new answer containing `token` drawn: when the text is in the page (a MutationObserver) and the
// next animation frame (the one that paints it). Both on the page's clock (performance.now()); resolves to
// { mutation, frame, echo } in ms after the keypress (echo: the prompt shown in the conversation, which the
// daemon's event for it draws).
export function armGlyphTimer(frame, token) {
  return frame.evaluate((token) => {
    const before = new Set(document.querySelectorAll(".assistant"));
    window.__glyph = new Promise((resolve) => {
      let key;
      let echo;
      document.querySelector("#input").addEventListener("keydown", (e) => {
        if (e.key === "Enter" && !e.shiftKey && key === undefined) key = e.timeStamp;
      }, { capture: true });
      const observer = new MutationObserver(() => {
        if (key === undefined) return;
        echo ??= [...document.querySelectorAll(".user")].some((n) => n.textContent.includes(token)) ? performance.now() - key : undefined;
        const answer = [...document.querySelectorAll(".assistant")].find((n) => !before.has(n) && n.textContent.includes(token));
        if (!answer) return;
        const drawn = performance.now();
        observer.disconnect();
        requestAnimationFrame(() => resolve({ mutation: drawn - key, frame: performance.now() - key, echo }));
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    });
  }, token);
}

export const glyphTime = (frame, timeout = 60000) => frame.evaluate((timeout) => Promise.race([window.__glyph,
  new Promise((_, fail) => setTimeout(() => fail(new Error("no answer's first glyph in the chat")), timeout))]), timeout);

// Polls `found` for `ms` (a bound, not a wait for an outcome: nothing is to come) and fails as soon as it gives
// something, naming `what`.
export async function noneWithin(found, ms, what) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const seen = await found();
    if (seen.length) throw new Error(`${what}: ${seen.join(", ")}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The chat page's script is running and the extension has answered its "ready" (the mode it set on <body>):
// before that the input is there (static HTML) but an Enter typed into it sends nothing.
export const chatLive = (kit) => kit.chat().locator("body[data-mode]").waitFor({ state: "attached", timeout: kit.T });

// VS Code in a browser writes the extensions' workspace state to the page's IndexedDB every 5 s, not as the page
// closes (async work is not allowed then): a window closed sooner than that after pi remembered something opens
// the next time without it. The extension's state as saved: its memento keys, from each workspace's database.
const savedState = (page) => page.evaluate(async () => {
  const asked = (request) => new Promise((ok, fail) => { request.onsuccess = () => ok(request.result); request.onerror = () => fail(request.error); });
  const found = [];
  for (const { name } of await indexedDB.databases()) {
    if (!name?.startsWith("vscode-web-state-db")) continue;
    const db = await asked(indexedDB.open(name));
    try {
      if (!db.objectStoreNames.contains("ItemTable")) continue;
      const value = await asked(db.transaction("ItemTable").objectStore("ItemTable").get("pi-daemon.pi-daemon-vscode"));
      if (typeof value === "string") found.push(...Object.keys(JSON.parse(value)));
    } finally {
      db.close();
    }
  }
  return found;
});

// The window on `folder` closed (its page gone), once VS Code has saved the extension's state naming `keys`
// (as a user's window, open longer than those 5 s, has), and its daemon ended with it; an attach server (it
// outlives the window) stopped: the next window on the folder starts from nothing.
export async function closeWindow(kit, folder = kit.work, keys = []) {
  if (keys.length) await until(async () => { const saved = await savedState(kit.page); return keys.every((k) => saved.includes(k)); },
                              `VS Code to save pi's state for the workspace (${keys.join(", ")})`);
  const pids = daemonsIn(folder);
  await kit.page.goto("about:blank");
  await gone(pids, "the closed window's daemon to end");
  const servers = serverPids(kit.runtime);
  for (const pid of servers) process.kill(pid, "SIGTERM");
  await gone(servers, "the workspace's server to stop");
}
