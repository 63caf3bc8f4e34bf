// Choosing a model: *pi: Select Model*, and, when a prompt finds no model (the daemon's -32004 with
// data.reason "noModel" or "missingKey"), leading the user to one instead of showing the daemon's words:
// a model that has a key, an API key for a provider (kept in VS Code's SecretStorage, never in settings,
// and given to every daemon started), a local model server (Ollama, llama.cpp or a URL), or the offline
// demo. The prompt is then sent.

import * as vscode from "vscode";
import type { PiClient, Json } from "./rpcClient";

export const KEY_PROVIDERS = ["anthropic", "openai", "openrouter", "google"];
const secretName = (provider: string) => `pi.apiKey.${provider}`;

// The -32004 of a prompt without a usable model, or undefined for any other error.
export function modelMissing(error: any): { reason: string; provider?: string } | undefined {
  const data = error?.data;
  return error?.code === -32004 && (data?.reason === "noModel" || data?.reason === "missingKey") ? data : undefined;
}

// Gives the daemon every key the user entered before (after each start: it keeps them in memory only).
export async function sendStoredKeys(client: PiClient, secrets: vscode.SecretStorage, log: (t: string) => void): Promise<void> {
  for (const provider of KEY_PROVIDERS) {
    const key = await secrets.get(secretName(provider));
    if (key) await client.request("setApiKey", { provider, key })
      .catch((error: any) => log(`setApiKey ${provider}: ${error.message ?? error}\n`));
  }
}

type Choice = vscode.QuickPickItem & { run?: () => Promise<boolean> };

async function useModel(client: PiClient, models: Json[], what: string): Promise<boolean> {
  if (!models.length) {
    vscode.window.showWarningMessage(`pi: ${what} offers no models.`);
    return false;
  }
  const model = models.length === 1 ? models[0] : ((await vscode.window.showQuickPick(
    models.map((m: Json) => ({ label: `${m.provider}/${m.id}`, description: m.name, m })),
    { placeHolder: `Which model of ${what}?`, ignoreFocusOut: true })) as Json)?.m;
  if (!model) return false;
  await client.request("setModel", { provider: model.provider, modelId: model.id });
  return true;
}

async function enterKey(client: PiClient, secrets: vscode.SecretStorage, provider?: string): Promise<boolean> {
  provider ??= await vscode.window.showQuickPick(KEY_PROVIDERS, { placeHolder: "An API key for which provider?", ignoreFocusOut: true });
  if (!provider) return false;
  const key = await vscode.window.showInputBox({
    prompt: `Your ${provider} API key (kept in VS Code's secret storage, never in settings)`, password: true, ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : "Paste the key"),
  });
  if (!key) return false;
  const { models } = await client.request("setApiKey", { provider, key: key.trim() });
  await secrets.store(secretName(provider), key.trim());
  return useModel(client, models, provider);
}

async function localServer(client: PiClient): Promise<boolean> {
  let { servers } = await client.request("probeLocalServers", {});
  if (!servers.length) {
    const url = await vscode.window.showInputBox({
      prompt: "No model server answered on Ollama's or llama.cpp's usual port. Its OpenAI-compatible URL:",
      placeHolder: "http://127.0.0.1:8000/v1", ignoreFocusOut: true,
    });
    if (!url) return false;
    ({ servers } = await client.request("probeLocalServers", { urls: [url.trim()] }));
    if (!servers.length) {
      vscode.window.showWarningMessage(`pi: ${url} did not answer with a list of models (GET ${url.trim()}/models).`);
      return false;
    }
  }
  const server = servers.length === 1 ? servers[0] : ((await vscode.window.showQuickPick(
    servers.map((s: Json) => ({ label: s.name, description: s.baseUrl, detail: s.models.join(", "), s })),
    { placeHolder: "Which server?", ignoreFocusOut: true })) as Json)?.s;
  if (!server) return false;
  const { models } = await client.request("addModelServer", { name: server.name, baseUrl: server.baseUrl });
  return useModel(client, models, server.name);
}

// Leads the user to a model; true once one is set (the kept prompt can go).
export async function chooseModel(client: PiClient, secrets: vscode.SecretStorage,
                                  missing: { reason: string; provider?: string }): Promise<boolean> {
  const { models } = await client.request("listModels");
  const usable = models.filter((m: Json) => m.provider !== "faux");
  const choices: Choice[] = [];
  if (missing.reason === "missingKey" && missing.provider)
    choices.push({ label: `$(key) Enter your ${missing.provider} API key`, run: () => enterKey(client, secrets, missing.provider) });
  if (usable.length) choices.push({ label: "models you have a key for", kind: vscode.QuickPickItemKind.Separator });
  for (const m of usable)
    choices.push({ label: `${m.provider}/${m.id}`, description: m.name, run: () => useModel(client, [m], m.provider) });
  choices.push({ label: "other ways", kind: vscode.QuickPickItemKind.Separator },
    { label: "$(key) Enter an API key…", description: KEY_PROVIDERS.join(", "), run: () => enterKey(client, secrets) },
    { label: "$(server) Use a local model server…", description: "Ollama, llama.cpp or another OpenAI-compatible URL", run: () => localServer(client) },
    { label: "$(beaker) Try the offline demo", description: "no model: it answers with your own words", run: async () => {
      await client.request("setModel", { provider: "faux", modelId: "echo" });
      return true;
    } });
  const why = missing.reason === "missingKey" ? `The model needs a ${missing.provider ?? ""} API key.` : "No model is chosen yet.";
  const pick = await vscode.window.showQuickPick(choices, { placeHolder: `${why} Your message is kept and sent once you choose.`, ignoreFocusOut: true });
  return pick?.run ? pick.run() : false;
}

// pi: Select Model — every model, the current one marked, the unavailable ones with the reason.
export async function pickModel(client: PiClient): Promise<void> {
  const [{ models, unavailable }, state] = await Promise.all([client.request("listModels"), client.request("getState")]);
  const current = state.model ? `${state.model.provider}/${state.model.id}` : "";
  const items: Json[] = models.map((m: Json) => {
    const name = `${m.provider}/${m.id}`;
    return { label: name, description: name === current ? "current" : m.name, picked: name === current, m };
  });
  if (unavailable.length) items.push({ label: "unavailable", kind: vscode.QuickPickItemKind.Separator });
  for (const u of unavailable) items.push({ label: `$(circle-slash) ${u.provider}`, description: u.reason, detail: (u.models ?? []).join(", ") });
  const pick = (await vscode.window.showQuickPick(items, { placeHolder: `Model (now ${current || "none"})` })) as Json;
  if (pick?.m) await client.request("setModel", { provider: pick.m.provider, modelId: pick.m.id });
  else if (pick) vscode.window.showWarningMessage(`pi: ${pick.description}`);
}
