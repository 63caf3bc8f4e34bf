// "pi: Manage Model Access": every provider with the state of its key (from the daemon's
// `modelAccess`: from the environment, entered in VS Code, none, what it last refused) and what
// can be done about it — enter, replace or remove a key (modelKeys.ts), add a local model server,
// remove one. Offered by the chat on a refused key and by "pi: Select Model" for a provider without
// models. Adding a key or a server ends by choosing one of its models (the user's default).

import * as vscode from "vscode";
import type { PiClient } from "./rpcClient";
import type { LocalServer, ModelInfo, ProviderAccess } from "./protocol";
import { KEY_PROVIDERS, Secrets, accessLine, removeKey, storeKey } from "./modelKeys";

type Action = vscode.QuickPickItem & { run?: () => Promise<unknown> };

// Sets a model of `models` (asked when several): the daemon keeps it as the user's default.
export async function useModel(client: PiClient, models: ModelInfo[], what: string): Promise<boolean> {
  if (!models.length) {
    vscode.window.showWarningMessage(`pi: ${what} offers no models.`);
    return false;
  }
  const model = models.length === 1 ? models[0] : ((await vscode.window.showQuickPick(
    models.map((m) => ({ label: `${m.provider}/${m.id}`, description: m.name, m })),
    { placeHolder: `Which model of ${what}?`, ignoreFocusOut: true })))?.m;
  if (!model) return false;
  await client.request("setModel", { provider: model.provider, modelId: model.id });
  return true;
}

export async function enterKey(client: PiClient, secrets: Secrets, provider?: string): Promise<boolean> {
  provider ??= await vscode.window.showQuickPick(KEY_PROVIDERS, { placeHolder: "An API key for which provider?", ignoreFocusOut: true });
  if (!provider) return false;
  const key = await vscode.window.showInputBox({
    prompt: `Your ${provider} API key (kept in VS Code's secret storage, never in settings)`, password: true, ignoreFocusOut: true,
    validateInput: (v) => (v.trim() ? undefined : "Paste the key"),
  });
  if (!key) return false;
  const { models } = await storeKey(client, secrets, provider, key);
  return useModel(client, models, provider);
}

export async function localServer(client: PiClient): Promise<boolean> {
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
  const server: LocalServer | undefined = servers.length === 1 ? servers[0] : (await vscode.window.showQuickPick(
    servers.map((s) => ({ label: s.name, description: s.baseUrl, detail: s.models.join(", "), s })),
    { placeHolder: "Which server?", ignoreFocusOut: true }))?.s;
  if (!server) return false;
  const { models } = await client.request("addModelServer", { name: server.name, baseUrl: server.baseUrl });
  return useModel(client, models, server.name);
}

// What can be done about one provider.
function actions(client: PiClient, secrets: Secrets, p: ProviderAccess): Action[] {
  const use: Action[] = p.models ? [{ label: "$(check) Use one of its models", run: async () =>
    useModel(client, (await client.request("listModels")).models.filter((m) => m.provider === p.provider), p.provider) }] : [];
  if (p.kind === "hosted") {
    if (p.key === "environment")
      return [...use, { label: `$(info) Its key is $${p.keyVariable} in the environment VS Code was started with`,
                        detail: "It wins over a key entered here: change or unset it there, then restart VS Code." }];
    const entered = p.key === "client";
    return [{ label: entered ? "$(key) Replace the key…" : "$(key) Enter a key…", run: () => enterKey(client, secrets, p.provider) },
            ...(entered ? [{ label: "$(trash) Remove the key", description: "forgotten here and by the daemon",
                             run: () => removeKey(client, secrets, p.provider) }] : []),
            ...use];
  }
  if (p.kind === "server")
    return [...use, ...(p.removable ? [{ label: "$(trash) Remove this server", description: "from your models.json",
                                         run: () => client.request("removeModelServer", { name: p.provider }) }] : [])];
  return use;
}

// The list, again after each change (so the user sees its effect) until dismissed; `provider`: go
// straight to that provider's actions.
export async function manageModelAccess(client: PiClient, secrets: Secrets, provider?: string): Promise<void> {
  for (;;) {
    const { providers } = await client.request("modelAccess");
    let chosen = providers.find((p) => p.provider === provider);
    provider = undefined;
    if (!chosen) {
      const items: (Action & { p?: ProviderAccess })[] = providers.map((p) => ({ ...accessLine(p), p }));
      items.push({ label: "", kind: vscode.QuickPickItemKind.Separator },
                 { label: "$(add) Add a local model server…", description: "Ollama, llama.cpp or another OpenAI-compatible URL",
                   run: () => localServer(client) });
      const pick = await vscode.window.showQuickPick(items, { placeHolder: "Model access: choose a provider to change its key or server",
                                                              matchOnDescription: true, matchOnDetail: true });
      if (!pick) return;
      if (pick.run) {
        await pick.run();
        continue;
      }
      chosen = pick.p!;
    }
    const line = accessLine(chosen);
    const offered = actions(client, secrets, chosen);
    const pick = offered.length ? await vscode.window.showQuickPick(offered, {
      placeHolder: `${chosen.provider}: ${line.description}${line.detail ? ` — ${line.detail}` : ""}` }) : undefined;
    if (!offered.length) vscode.window.showInformationMessage(`pi: ${chosen.provider} needs nothing (${line.description}).`);
    await pick?.run?.();
  }
}
