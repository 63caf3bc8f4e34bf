// History: the workspace's sessions in a picker that also searches their text as the user types
// (historySearch.ts), with "pi: Search Session History" opening it ready to type. A chosen
// session (or match) opens where History was asked from: the side bar's chat or an editor tab.

import * as vscode from "vscode";
import type { Json, PiClient } from "./rpcClient";
import { MAX_FILE_BYTES, searchSessions } from "./historySearch";

export interface Chosen {
  session: Json;
  title: string;
  reveal?: { query: string; entryId: string };
}

// A tab's or a list's one-line title: the session's name or first message.
export function tabTitle(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 40 ? `${line.slice(0, 39)}…` : line || "chat";
}

function sessionTitle(s: Json): string {
  return (s.name || s.firstMessage || "(empty)").replace(/\s+/g, " ").trim();
}

const localTime = (iso: string) => (iso ? new Date(iso).toLocaleString() : "");

async function readStart(file: string): Promise<string> {
  const bytes = await vscode.workspace.fs.readFile(vscode.Uri.file(file));
  return new TextDecoder().decode(bytes.length > MAX_FILE_BYTES ? bytes.subarray(0, MAX_FILE_BYTES) : bytes);
}

type Item = vscode.QuickPickItem & { chosen?: Chosen };

export async function pickHistory(client: PiClient, initialQuery = ""): Promise<Chosen | undefined> {
  const { sessions } = await client.request("session/list");
  const listed: Json[] = sessions.filter((s: Json) => !s.parentSessionId && !s.damaged);
  const byId = new Map<string, Json>(listed.map((s) => [s.sessionId, s]));
  const sessionItems: Item[] = listed.map((s) => ({
    label: sessionTitle(s), description: localTime(s.updatedAt), detail: `${s.messageCount} messages`,
    chosen: { session: s, title: sessionTitle(s) },
  }));
  const pick = vscode.window.createQuickPick<Item>();
  pick.title = "pi: History";
  pick.placeholder = "Resume a session, or type to search the text of all sessions";
  pick.matchOnDescription = true;
  pick.items = sessionItems;
  let searchNo = 0;
  let timer: NodeJS.Timeout | undefined;
  const search = (query: string) => {
    const no = ++searchNo;
    if (query.trim().length < 2) {
      pick.items = sessionItems;
      pick.busy = false;
      return;
    }
    pick.busy = true;
    searchSessions(listed, query, readStart).then(({ hits, capped }) => {
      if (no !== searchNo) return; // the user typed on
      const found: Item[] = hits.map((h) => {
        const s = byId.get(h.sessionId)!;
        return { label: `$(search) ${sessionTitle(s)}`, description: `${h.role} · ${localTime(s.updatedAt)}`, detail: h.snippet,
                 alwaysShow: true, chosen: { session: s, title: sessionTitle(s), reveal: { query: h.match, entryId: h.entryId } } };
      });
      const note: Item[] = found.length ? [] : [{ label: `No session says "${query.trim()}"`, alwaysShow: true }];
      const more: Item[] = capped ? [{ label: "Only the newest sessions and the first matches were searched", kind: vscode.QuickPickItemKind.Separator }] : [];
      pick.items = [...found, ...note, ...more, { label: "sessions", kind: vscode.QuickPickItemKind.Separator }, ...sessionItems];
      pick.busy = false;
    }, (error) => {
      pick.busy = false;
      vscode.window.showErrorMessage(`pi: the search failed: ${error.message ?? error}`);
    });
  };
  pick.onDidChangeValue((value) => {
    clearTimeout(timer);
    timer = setTimeout(() => search(value), 200);
  });
  if (initialQuery) {
    pick.value = initialQuery;
    search(initialQuery);
  }
  return new Promise((resolve) => {
    pick.onDidAccept(() => {
      const chosen = pick.selectedItems[0]?.chosen;
      if (!chosen) return; // a note: the picker stays
      resolve(chosen);
      pick.hide();
    });
    pick.onDidHide(() => {
      clearTimeout(timer);
      resolve(undefined);
      pick.dispose();
    });
    pick.show();
  });
}
