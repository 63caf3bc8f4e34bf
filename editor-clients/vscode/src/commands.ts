// Slash commands for completion after "/": the daemon's getCommands list, kept current by
// commands_update events. Only the first word is completed, and only while it is being typed.

import type { AgentEvent, CommandInfo, GetCommandsResult } from "./protocol";

export type { CommandInfo };

interface Requester {
  request(method: "getCommands"): Promise<GetCommandsResult>;
}

export class Commands {
  list: CommandInfo[] = [];

  async load(client: Requester): Promise<CommandInfo[]> {
    this.list = (await client.request("getCommands")).commands;
    return this.list;
  }

  // True when the event changed the list.
  apply(event: AgentEvent): boolean {
    if (event.type !== "commands_update") return false;
    this.list = event.commands;
    return true;
  }

  complete(input: string): CommandInfo[] {
    return completeCommand(this.list, input);
  }
}

// The commands whose name starts with what follows the "/"; none once the first word is
// done (a space typed) or when it is no command name (a path such as /usr/bin).
export function completeCommand(list: CommandInfo[], input: string): CommandInfo[] {
  const match = /^\/([A-Za-z0-9_.:-]*)$/.exec(input);
  if (!match) return [];
  const typed = match[1].toLowerCase();
  return list.filter((c) => c.name.toLowerCase().startsWith(typed));
}
