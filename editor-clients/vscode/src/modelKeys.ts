// The API keys a user gives in VS Code — kept in its SecretStorage (never in settings), handed to
// every daemon started (it holds them in memory only) — and the words for a provider's access as
// the daemon's `modelAccess` answers it. One place: a key entered, replaced or removed here is what
// the next start sends. No `vscode` import: node --test drives it against the real daemon.

import type { AgentEvent, AssistantMessage, ModelAccessResult, PiClient, ProviderAccess } from "./rpcClient";

export const KEY_PROVIDERS = ["anthropic", "openai", "openrouter", "google"];
const secretName = (provider: string) => `pi.apiKey.${provider}`;

// VS Code's SecretStorage, as much of it as is used here.
export interface Secrets {
  get(key: string): PromiseLike<string | undefined>;
  store(key: string, value: string): PromiseLike<void>;
  delete(key: string): PromiseLike<void>;
}

// Gives the daemon every key the user entered before (after each start).
export async function sendStoredKeys(client: PiClient, secrets: Secrets, log: (t: string) => void): Promise<void> {
  for (const provider of KEY_PROVIDERS) {
    const key = await secrets.get(secretName(provider));
    if (key) await client.request("setApiKey", { provider, key })
      .catch((error: any) => log(`setApiKey ${provider}: ${error.message ?? error}\n`));
  }
}

// A key entered (or one replacing the last): the daemon takes it first, so a key it refuses is not kept.
export async function storeKey(client: PiClient, secrets: Secrets, provider: string, key: string) {
  const result = await client.request("setApiKey", { provider, key: key.trim() });
  await secrets.store(secretName(provider), key.trim());
  return result;
}

// The key forgotten here first (it is not sent at the next start even if the daemon is gone), then by the daemon.
export async function removeKey(client: PiClient, secrets: Secrets, provider: string): Promise<ModelAccessResult> {
  await secrets.delete(secretName(provider));
  return client.request("removeApiKey", { provider });
}

const count = (n: number) => `${n} model${n === 1 ? "" : "s"}`;

// One provider in "pi: Manage Model Access": where its key comes from (or its server), how many
// models it offers now, and why none or what it last refused.
export function accessLine(p: ProviderAccess): { label: string; description: string; detail?: string } {
  let label: string, where: string;
  if (p.kind === "hosted") {
    label = `$(key) ${p.provider}`;
    where = p.key === "environment" ? `key from $${p.keyVariable ?? "its variable"}`
      : p.key === "client" ? "key entered in VS Code" : "no key";
  } else if (p.kind === "server") {
    label = `$(server) ${p.provider}`;
    where = p.baseUrl ?? "model server";
  } else {
    label = `$(beaker) ${p.provider}`;
    where = "offline demo, no key";
  }
  const noKey = p.kind === "hosted" && p.key === "none" ? `no key: choose it to enter one (or set $${p.keyVariable} before starting VS Code)` : undefined;
  const detail = p.lastError ? `refused: ${p.lastError}` : p.models ? undefined : noKey ?? p.reason ?? undefined;
  return { label, description: `${where} · ${count(p.models)}`, ...(detail ? { detail } : {}) };
}

export const MANAGE_ACCESS = "Manage Model Access";

// An answer the provider refused for its credentials (HTTP 401/403): what the chat says, with
// MANAGE_ACCESS as its button.
export function authFailure(event: AgentEvent): { provider: string; text: string } | undefined {
  if (event.type !== "message_end" || event.message.role !== "assistant") return undefined;
  const message = event.message as AssistantMessage;
  if (message.errorKind !== "auth") return undefined;
  const provider = message.errorProvider ?? "the provider";
  return { provider, text: `${provider} refused the credentials. Enter another key or choose another model in ${MANAGE_ACCESS}.` };
}
