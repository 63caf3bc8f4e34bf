// Choosing a model: *pi: Select Model*, and, when a prompt finds no model (the daemon's -32004 with
// data.reason "noModel" or "missingKey"), leading the user to one instead of showing the daemon's words:
// a model that has a key, an API key for a provider (modelKeys.ts), a local model server (Ollama,
// llama.cpp or a URL), or the offline demo. The prompt is then sent. The model chosen is the user's
// default (the daemon keeps it), for new chats and the next start.

import * as vscode from "vscode";
import type { PiClient } from "./rpcClient";
import type { ModelInfo } from "./protocol";
import { KEY_PROVIDERS, Secrets } from "./modelKeys";
import { enterKey, localServer, manageModelAccess, useModel } from "./modelAccess";

// The -32004 of a prompt without a usable model, or undefined for any other error.
export function modelMissing(error: unknown): { reason: string; provider?: string } | undefined {
  const { code, data } = (error ?? {}) as { code?: number; data?: { reason?: string; provider?: string } };
  return code === -32004 && data && (data.reason === "noModel" || data.reason === "missingKey") ? { ...data, reason: data.reason } : undefined;
}

type Choice = vscode.QuickPickItem & { run?: () => Promise<boolean> };

// Leads the user to a model; true once one is set (the kept prompt can go).
export async function chooseModel(client: PiClient, secrets: Secrets,
                                  missing: { reason: string; provider?: string }): Promise<boolean> {
  const { models } = await client.request("listModels");
  const usable = models.filter((m) => m.provider !== "faux");
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

// pi: Select Model — every model, the current one marked; the providers without a usable model with the
// reason, each leading to Manage Model Access for it (a key to enter, a server to add).
export async function pickModel(client: PiClient, secrets: Secrets): Promise<void> {
  const [{ models, unavailable }, state] = await Promise.all([client.request("listModels"), client.request("getState")]);
  const current = state.model ? `${state.model.provider}/${state.model.id}` : "";
  // a model to set, a provider to give access to, or Manage model access
  type Item = vscode.QuickPickItem & { m?: ModelInfo; provider?: string; manage?: boolean };
  const items: Item[] = models.map((m) => {
    const name = `${m.provider}/${m.id}`;
    return { label: name, description: name === current ? "current" : m.name, picked: name === current, m };
  });
  if (unavailable.length) items.push({ label: "unavailable", kind: vscode.QuickPickItemKind.Separator });
  for (const u of unavailable)
    items.push({ label: `$(circle-slash) ${u.provider}`, description: u.reason, detail: (u.models ?? []).join(", "), provider: u.provider });
  items.push({ label: "", kind: vscode.QuickPickItemKind.Separator },
             { label: "$(key) Manage model access…", description: "API keys and model servers", manage: true });
  const pick = (await vscode.window.showQuickPick(items, {
    placeHolder: `Model for this chat and new ones (now ${current || "none"})`, matchOnDescription: true }));
  if (pick?.m) await client.request("setModel", { provider: pick.m.provider, modelId: pick.m.id });
  else if (pick) await manageModelAccess(client, secrets, pick.provider);
}
