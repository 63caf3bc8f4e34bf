// History: the workspace's sessions in a picker that also searches what was said in all of them as
// the user types (the daemon's session/search). A chosen session (or match) opens where History
// was asked from: the side bar's chat or an editor tab, the match marked and in view.

import * as vscode from "vscode";
import type { PiClient } from "./rpcClient";
import type { SessionSummary } from "./protocol";
import { localTime, sessionTitle } from "./sessionList";

export interface Chosen {
  session: SessionSummary;
  title: string;
  reveal?: { query: string; entryId: string };
}

// A tab's or a list's one-line title: the session's name or first message.
export function tabTitle(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 40 ? `${line.slice(0, 39)}…` : line || "chat";
}

// The match's line, starting shortly before the words (a long snippet is cut off at the right).
function around(snippet: string, query: string): string {
  const at = snippet.toLowerCase().indexOf(query.toLowerCase());
  return at > 30 ? `…${snippet.slice(at - 30).replace(/^\S*\s/, "")}` : snippet;
}

type Item = vscode.QuickPickItem & { chosen?: Chosen };

export async function pickHistory(client: PiClient, initialQuery = ""): Promise<Chosen | undefined> {
  const { sessions } = await client.request("session/list");
  const listed = sessions.filter((s) => !s.parentSessionId && !s.damaged);
  const byId = new Map(listed.map((s) => [s.sessionId, s]));
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
    client.request("session/search", { query: query.trim().slice(0, 200), limit: 100 }).then(({ matches, truncated }) => {
      if (no !== searchNo) return; // the user typed on
      const found: Item[] = matches.filter((m) => byId.has(m.sessionId)).map((m) => {
        const s = byId.get(m.sessionId)!;
        return { label: `$(search) ${sessionTitle(s)}`, description: `${m.role} · ${localTime(m.timestamp)}`, detail: around(m.snippet, query.trim()),
                 alwaysShow: true, chosen: { session: s, title: sessionTitle(s), reveal: { query: query.trim(), entryId: m.entryId } } };
      });
      const note: Item[] = found.length ? [] : [{ label: `No session says "${query.trim()}"`, alwaysShow: true }];
      const more: Item[] = truncated ? [{ label: "the first 100 matches", kind: vscode.QuickPickItemKind.Separator }] : [];
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
