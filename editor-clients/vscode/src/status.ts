// The status bar's text: model always (from the first moment the daemon runs), tokens, cost
// and context use once the session has messages. No `vscode` import: tested with node --test.

import type { PiClient } from "./rpcClient";

export async function statusText(client: PiClient): Promise<string> {
  const state = await client.request("getState");
  const model = state.model ? `${state.model.provider}/${state.model.id}` : "no model";
  const busy = state.isStreaming ? " · working" : "";
  if (!state.messageCount) return `π ${model}${busy}`;
  const stats = await client.request("session/stats", { sessionId: state.sessionId });
  const context = stats.contextPercent == null ? "" : ` · ${Math.round(stats.contextPercent)}% context`;
  return `π ${model} · ${stats.tokens.total} tok · $${stats.cost.toFixed(4)}${context}${busy}`;
}
