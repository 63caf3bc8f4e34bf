// The pi-daemon client: starts the daemon, speaks JSON-RPC to it (Content-Length framing,
// vscode-jsonrpc), restarts it when it dies, and rebuilds the conversation from events.
// No `vscode` import: node --test drives this module against the real daemon.

import { ChildProcess, spawn } from "child_process";
import { resolve as resolvePath } from "path";
import {
  createMessageConnection,
  MessageConnection,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";
import { describeCall } from "./describe";
import type { FsHandlers } from "./editorFs";
import type { LanguageHandlers } from "./languageFeatures";

export { Commands, completeCommand } from "./commands";
import type {
  AgentEvent,
  AgentEventParams,
  ContextItem,
  Image,
  AgentMessage,
  ClientRequests,
  InitializeResult,
  JsonObject,
  MethodName,
  Params,
  PermissionOutcome,
  PermissionRequestParams,
  Result,
  SandboxState,
  ServerMode,
  SaveFilesParams,
  SaveFilesResult,
  SessionLoadResult,
  UserAskParams,
  UserAskResult,
  NavigateResult,
  TreeNode,
  TreeResult,
  UserContent,
  WorkspaceTrustParams,
} from "./protocol";

export type * from "./protocol";
export type Outcome = PermissionOutcome;
export type PermissionRequest = PermissionRequestParams;
// A method's params as an argument: optional when the method requires none.
export type ParamsArg<M extends MethodName> = {} extends Params<M> ? [params?: Params<M>] : [params: Params<M>];
export type WorkspaceTrustRequest = WorkspaceTrustParams;

// Short fixed labels: a button never holds the command or the rule (a long one was clipped
// to fragments); the body says both in full.
const CHOICE_LABELS: [Outcome, string][] = [
  ["allow_once", "Allow once"], ["allow_session", "Allow for this session"], ["allow_always", "Always allow…"],
  ["reject_once", "Reject"], ["reject_always", "Always reject…"], ["reject_and_stop", "Reject and stop"],
];

// The answers that ask for more first: the words pi is told when refusing, an edited command to run instead.
export type FollowUp = "reason" | "edit";

// The answers that keep a rule (said with the rule in the prompt's body).
export const remembers = (outcome: Outcome) => ["allow_session", "allow_always", "reject_always"].includes(outcome);

// Whether a command will run sandboxed: the request does not say, so the daemon's getState (the
// sandbox its bash reads at each call, from the same settings and bubblewrap probe) is asked.
export function sandboxLine(sandbox: SandboxState | null | undefined): string {
  if (!sandbox) return "Sandboxed: unknown (the daemon did not say).";
  if (sandbox.active) return `Sandboxed: yes (bubblewrap, the network ${sandbox.network ? "allowed" : "cut off"}).`;
  return `Sandboxed: no (${sandbox.reason ?? "no sandbox here"}): it runs with all your rights.`;
}

// The prompt for a permission request: what the call will do (the whole command, the file and
// its content or diff; for a command, whether it runs sandboxed, given `sandbox`) and the offered
// choices; the body names the exact rule the remembering ones would keep (the request's `remember`).
// The heading is the request's title on one short line.
// Besides the request's options: "Edit command…" for a command (allow once, as the user changed it) and
// "Reject with reason…" (the user's words are what pi is told), each with its follow-up.
export function permissionPrompt(request: PermissionRequest, sandbox?: SandboxState | null): {
  message: string; detail: string; choices: { label: string; outcome: Outcome; follow?: FollowUp }[];
} {
  const heading = request.title.replace(/\s+/g, " ").trim();
  const message = heading.length > 80 ? `${heading.slice(0, 78)}…${heading.endsWith("`") ? "`" : ""}` : heading;
  const offered = new Set(request.options ?? []);
  const choices: { label: string; outcome: Outcome; follow?: FollowUp }[] = [];
  for (const [outcome, label] of CHOICE_LABELS) {
    if (!offered.has(outcome)) continue;
    choices.push({ label, outcome });
    if (outcome === "reject_once") choices.push({ label: "Reject with reason…", outcome, follow: "reason" });
    // the edit is a one-line field: a command of several lines (a here-document) is not offered to it
    const command = request.args?.command;
    if (outcome === "allow_once" && request.toolName === "bash" && typeof command === "string" && !command.includes("\n"))
      choices.push({ label: "Edit command…", outcome, follow: "edit" });
  }
  const lines = describeCall(request.toolName, request.args).split("\n");
  const shown = lines.length > 40 ? [...lines.slice(0, 40), `… ${lines.length - 40} more lines`] : lines;
  const remembering = choices.filter((c) => remembers(c.outcome)).map((c) => `"${c.label}"`);
  // a rule for exactly this command would only repeat the command shown just above
  const scope = request.remember?.scope === "exact" && request.toolName === "bash" ? "exactly this command" : request.remember?.label;
  const rule = scope && remembering.length ? `\n\n${remembering.join(", ")} remember: ${scope}` : "";
  const box = request.toolName === "bash" && sandbox !== undefined ? `\n\n${sandboxLine(sandbox)}` : "";
  return { message, detail: shown.join("\n") + box + rule, choices };
}

// How a VS Code user picks a model (initialize's clientInfo.modelPicker): the daemon's offline demo and its
// "no model" error point at it instead of the command line's --model.
export const MODEL_PICKER = "the model picker (pi: Select Model, or click the model in the status bar)";

// A permission's answer: the outcome, and for a write/edit accepted after the user changed the proposal
// in the review, the text to write instead (`content`); a refusal's `reason` (what pi is told); an allowed
// call's `editedArgs` (the user's changed call, run instead).
export type PermissionAnswer = Outcome | { outcome: Outcome; content?: string; reason?: string; editedArgs?: JsonObject };

// What Stop gave back, for the chat: the texts back in its input, and the line saying so.
export function returnedInput(texts: string[]): { text: string; note: string } {
  const one = texts.length === 1;
  return { text: texts.join("\n\n"),
           note: `Stopped. ${one ? "The queued message was" : `The ${texts.length} queued messages were`} not sent: ${one ? "it is" : "they are"} back in the input.` };
}

export interface ClientOptions {
  command: string;
  args?: string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  restart?: boolean; // start the daemon again when it dies (default true)
  onLog?: (text: string) => void;
  // `cancelled` settles when the daemon withdraws the request (the run stopped, nobody answered in time)
  onPermission?: (request: PermissionRequest, cancelled: Promise<unknown>) => Promise<PermissionAnswer>;
  onWorkspaceTrust?: (request: WorkspaceTrustRequest) => Promise<boolean | undefined>; // undefined: no answer
  // the agent's questions (user/ask); `cancelled` settles when the daemon withdraws one (the run stopped, no answer in time)
  onAskUser?: (request: UserAskParams, cancelled: Promise<unknown>) => Promise<UserAskResult>;
  fs?: FsHandlers; // the editor is the agent's file system (editorFs.ts)
  save?: (params: SaveFilesParams) => Promise<SaveFilesResult>; // fs/save (saveDocuments.ts)
  quickDeaths?: number; // deaths within QUICK_MS of their start after which restarting gives up (default 3)
  language?: LanguageHandlers; // the editor's language servers answer the agent (languageFeatures.ts)
}


type EventListener = (sessionId: string, event: AgentEvent, seq: number) => void;

// How the daemon ended: its exit code or signal, and whether it is being started again
// (false once it died `quickDeaths` times in a row, each within QUICK_MS of its start and
// before it finished a run).
export interface DaemonExit { code: number | null; signal: string | null; restarting: boolean }
const QUICK_MS = 30_000;

// The daemon could not be started at all (`code` ENOENT: the program is not there), or it
// ended before it answered `initialize` (`code` "EXITED"; `log` holds what it printed).
export class DaemonStartError extends Error {
  constructor(message: string, readonly code: string, readonly log = "") {
    super(message);
  }
}

export class PiClient {
  private child?: ChildProcess;
  private connection?: MessageConnection;
  private stopping = false;
  private reviving?: Promise<void>; // the user's Restart, until the daemon answers
  private listeners: EventListener[] = [];
  private restartListeners: ((attempt: number) => void)[] = [];
  private exitListeners: ((exit: DaemonExit) => void)[] = [];
  private returnedListeners: ((sessionId: string | undefined, texts: string[]) => void)[] = [];
  private quickDeaths = 0;
  private lastSeq = new Map<string, number>();
  private carried = new Map<string, number>(); // the seqs seen before the daemon was started again (seen())
  private rebase = new Set<string>(); // sessions whose next live event starts the count (after a catch-up by replay)
  // initialize's `server`: shared when the daemon is a server other clients may use too (pi-daemon serve)
  server?: ServerMode;
  restarts = 0;
  gaps = 0;

  constructor(private readonly options: ClientOptions) {}

  onEvent(listener: EventListener): () => void {
    this.listeners.push(listener);
    return () => (this.listeners = this.listeners.filter((l) => l !== listener));
  }

  onRestart(listener: (attempt: number) => void): void {
    this.restartListeners.push(listener);
  }

  onExit(listener: (exit: DaemonExit) => void): void {
    this.exitListeners.push(listener);
  }

  // Stop gave back queued messages (steering, then follow-ups, in queue order): the chat of that
  // session (undefined: the current one) puts them back in its input.
  onQueueReturned(listener: (sessionId: string | undefined, texts: string[]) => void): void {
    this.returnedListeners.push(listener);
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  private answeredWorkspace?: string; // initialize's `workspace`

  // The daemon's workspace, which the paths it reports (changes, turn_diff) are relative to:
  // as initialize names it; until then (or from a daemon that does not) its --workspace when
  // given, else the folder it is started in.
  get workspace(): string {
    if (this.answeredWorkspace) return this.answeredWorkspace;
    const args = this.options.args ?? [];
    const at = args.lastIndexOf("--workspace");
    const given = at >= 0 ? args[at + 1] : args.filter((a) => a.startsWith("--workspace=")).pop()?.slice("--workspace=".length);
    return given ? resolvePath(this.options.cwd, given) : this.options.cwd;
  }

  // The daemon asks once whether the workspace's own configuration may apply. An answer is
  // remembered by the daemon; no answer (an error reply) leaves it untrusted for this run only.
  private async answerWorkspaceTrust(params: WorkspaceTrustRequest): Promise<{ trusted: boolean }> {
    const trusted = this.options.onWorkspaceTrust ? await this.options.onWorkspaceTrust(params) : undefined;
    if (typeof trusted !== "boolean") throw new ResponseError(-32800, "the user did not answer");
    return { trusted };
  }

  async start(): Promise<InitializeResult> {
    this.stopping = false;
    const command = this.options.command;
    const child = spawn(command, this.options.args ?? [], {
      cwd: this.options.cwd,
      env: this.options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.child = child;
    let printed = ""; // the last of what it printed, for the error when it ends before answering
    child.stderr?.on("data", (chunk: Buffer) => {
      printed = (printed + chunk.toString()).slice(-2000);
      this.options.onLog?.(chunk.toString());
    });
    // Nothing is written to a program that never started: its stdin would be gone.
    await new Promise<void>((ok, fail) => {
      child.once("spawn", ok);
      child.once("error", (error: NodeJS.ErrnoException) => {
        const why = error.code === "ENOENT" ? `"${command}" was not found` : `"${command}" could not be run (${error.message})`;
        this.options.onLog?.(`pi-daemon did not start: ${why}\n`);
        fail(new DaemonStartError(why, error.code ?? "ESPAWN"));
      });
    });
    const startedAt = Date.now();
    let answered = false;
    const ended = new Promise<never>((_ok, fail) => child.once("exit", (code, signal) => {
      if (!answered) fail(new DaemonStartError(`it ended (${signal ?? `exit code ${code}`}) before it answered${printed.trim() ? `: ${printed.trim().split("\n").slice(-3).join(" ")}` : ""}`, "EXITED", printed));
    }));
    ended.catch(() => undefined);
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout!),
      new StreamMessageWriter(child.stdin!),
    );
    this.connection = connection;
    connection.onNotification("agent/event", (params: AgentEventParams) => {
      // A replayed event is not counted: it carries the seq of the last live one before it.
      if (!params.replay) {
        const previous = this.lastSeq.get(params.sessionId) ?? (this.rebase.delete(params.sessionId) ? params.seq - 1 : 0);
        if (params.seq !== previous + 1) this.gaps++;
        if (params.seq <= previous) return; // seen already: drawn once
        this.lastSeq.set(params.sessionId, params.seq);
      }
      if (params.event.type === "agent_settled") this.quickDeaths = 0; // it did its work: not dying in a loop
      for (const listener of this.listeners) listener(params.sessionId, params.event, params.seq);
    });
    connection.onRequest("permission/request", async (params: PermissionRequest, token) => {
      // The daemon cancels the request when the run is aborted or nobody answered in time.
      const cancelled = new Promise<Outcome>((resolve) => token.onCancellationRequested(() => resolve("cancelled")));
      const answer = this.options.onPermission ? await Promise.race([this.options.onPermission(params, cancelled), cancelled]) : "cancelled";
      return typeof answer === "string" ? { outcome: answer } : answer;
    });
    connection.onRequest("workspace/trust", (params: WorkspaceTrustRequest) => this.answerWorkspaceTrust(params));
    const onAskUser = this.options.onAskUser;
    if (onAskUser) connection.onRequest("user/ask", async (params: UserAskParams, token): Promise<UserAskResult> => {
      const cancelled = new Promise<UserAskResult>((resolve) => token.onCancellationRequested(() => resolve({ outcome: "dismissed" })));
      return Promise.race([onAskUser(params, cancelled), cancelled]);
    });
    // The daemon's requests to the editor, params and result typed by protocol.ts's ClientRequests.
    const serve = <M extends keyof ClientRequests>(method: M,
      handler: (params: ClientRequests[M]["params"]) => ClientRequests[M]["result"] | Promise<ClientRequests[M]["result"]>) =>
      connection.onRequest(method, async (params: ClientRequests[M]["params"]): Promise<unknown> => handler(params));
    const fs = this.options.fs;
    if (fs) {
      serve("fs/readTextFile", (params) => fs.readTextFile(params));
      serve("workspace/applyEdit", (params) => fs.applyEdit(params));
    }
    const save = this.options.save;
    if (save) serve("fs/save", (params) => save(params));
    const language = this.options.language;
    if (language) {
      serve("editor/diagnostics", (params) => language.diagnostics(params));
      serve("editor/definition", (params) => language.definition(params));
      serve("editor/references", (params) => language.references(params));
      serve("editor/documentSymbols", (params) => language.documentSymbols(params));
      serve("editor/workspaceSymbols", (params) => language.workspaceSymbols(params));
      serve("editor/hover", (params) => language.hover(params));
      const languageStatus = language.languageStatus;
      if (languageStatus) serve("editor/languageStatus", (params) => languageStatus(params));
    }
    connection.listen();
    child.on("exit", (code, signal) => {
      connection.dispose();
      if (this.child !== child) return;
      this.connection = undefined; // requests until it is back: "pi-daemon is not running"
      this.options.onLog?.(`pi-daemon exited (${signal ?? `exit code ${code}`})\n`);
      if (this.stopping || !answered) return; // a start that failed is the caller's to report
      this.quickDeaths = Date.now() - startedAt < QUICK_MS ? this.quickDeaths + 1 : 1;
      const restarting = (this.options.restart ?? true) && this.quickDeaths < (this.options.quickDeaths ?? 3);
      this.exitListeners.forEach((l) => l({ code, signal, restarting }));
      if (!restarting) return;
      this.restarts++;
      setTimeout(() => {
        if (this.stopping) return;
        this.forgetSeqs();
        this.start().then(
          () => this.restartListeners.forEach((l) => l(this.restarts)),
          (error) => {
            this.options.onLog?.(`restart failed: ${error.message ?? error}\n`);
            this.exitListeners.forEach((l) => l({ code: null, signal: null, restarting: false }));
          },
        );
      }, Math.min(2000, 200 * 2 ** (this.quickDeaths - 1)));
    });
    const initialized = await Promise.race([ended, this.request("initialize", {
      protocolVersion: 1,
      clientInfo: { name: "pi-daemon-vscode", version: "0.1.0", modelPicker: MODEL_PICKER },
      capabilities: {
        permissions: Boolean(this.options.onPermission),
        workspaceTrust: Boolean(this.options.onWorkspaceTrust),
        askUser: Boolean(this.options.onAskUser),
        ...(fs ? { fs: { readTextFile: true, applyEdit: true, ...(save ? { save: true } : {}) } } : {}),
        ...(language ? { languageFeatures: language.features } : {}),
      },
    })]);
    answered = true;
    this.server = initialized.server ?? undefined;
    this.answeredWorkspace = typeof initialized.workspace === "string" && initialized.workspace ? initialized.workspace : undefined;
    // A new daemon knows no unsaved documents: those left unsaved before it started count too.
    if (fs) this.notify("fs/didChangeDirty", { paths: fs.dirtyPaths() });
    return initialized;
  }

  // Starts it again after restarting gave up (the user's "Restart"); listeners hear it as a restart.
  // While it runs or is being revived, nothing more starts (a second click waits for the first):
  // two starts would leave the first daemon running, unowned.
  revive(): Promise<void> {
    if (this.connection) return Promise.resolve();
    this.reviving ??= (async () => {
      this.quickDeaths = 0;
      this.forgetSeqs();
      await this.start();
      this.restarts++;
      this.restartListeners.forEach((l) => l(this.restarts));
    })().finally(() => (this.reviving = undefined));
    return this.reviving;
  }

  // A declared method, params and result typed by protocol.ts; params may be left out when none is required.
  request<M extends MethodName>(method: M, ...params: ParamsArg<M>): Promise<Result<M>> {
    if (!this.connection) return Promise.reject(new Error("pi-daemon is not running"));
    return this.connection.sendRequest(method, params[0] ?? {});
  }

  notify<M extends MethodName>(method: M, ...params: ParamsArg<M>): void {
    this.connection?.sendNotification(method, params[0] ?? {});
  }

  prompt(text: string, behaviour?: "steer" | "followUp", sessionId?: string, context?: ContextItem[], images?: Image[]) {
    return this.request("prompt", { text, sessionId, streamingBehavior: behaviour, context, images });
  }
  steer(text: string, sessionId?: string) {
    return this.request("steer", { text, sessionId });
  }
  followUp(text: string, sessionId?: string) {
    return this.request("followUp", { text, sessionId });
  }
  async abort(sessionId?: string) {
    const result = await this.request("abort", { sessionId });
    const texts = [...(result.steering ?? []), ...(result.followUp ?? [])];
    if (texts.length) this.returnedListeners.forEach((l) => l(sessionId, texts));
    return result;
  }

  // A new connection counts afresh; what the last one saw stays known, for a view that resumes.
  private forgetSeqs(): void {
    this.carried = new Map([...this.carried, ...this.lastSeq]);
    this.lastSeq.clear();
  }

  // The last live seq seen of a session, on this connection or the one before it (undefined: none).
  seen(sessionId: string): number | undefined {
    return this.lastSeq.get(sessionId) ?? this.carried.get(sessionId);
  }

  // Open a session: replayed (a view drawn from nothing), or with `fromSeq` (a view that has everything
  // before it: the daemon sends what followed, `catchUp` "events", or, when it no longer keeps them,
  // replays the whole conversation, "replay": the view is cleared first). Its events go on from there.
  async load(sessionId: string, how: { replay?: boolean; fromSeq?: number } = { replay: true }): Promise<SessionLoadResult> {
    const loaded = await this.request("session/load", { sessionId, ...how });
    const id = loaded.sessionId;
    this.carried.delete(id);
    if (how.fromSeq !== undefined && loaded.catchUp === "events") this.lastSeq.set(id, how.fromSeq - 1);
    else if (loaded.catchUp === "replay" || how.replay) { // the message in progress may follow the replay, with its seqs
      this.lastSeq.delete(id);
      this.rebase.add(id);
    } else if ((this.lastSeq.get(id) ?? 0) < loaded.nextSeq - 1) this.lastSeq.set(id, loaded.nextSeq - 1);
    return loaded;
  }

  // Move the session's current position to an entry (optionally summarising the branch left).
  navigate(entryId: string, summarize = false, sessionId?: string): Promise<NavigateResult> {
    return this.request("session/navigate", { entryId, summarize, sessionId });
  }

  async tree(sessionId?: string): Promise<TreeItem[]> {
    return outline(await this.request("session/tree", { sessionId }));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.stdin?.end(); // the daemon settles and exits 0 on stdin EOF
    const timer = setTimeout(() => child.kill("SIGTERM"), 3000);
    await exited;
    clearTimeout(timer);
  }
}

// --- the session tree, as an outline of branches ------------------------------------------

// A message, or a branch: the messages that follow one child of a branch point.
export interface TreeItem {
  kind: "entry" | "branch";
  id: string; // the entry (for a branch: its first shown entry)
  title: string;
  role?: string; // an entry's: user, assistant, summary
  text?: string; // an entry's whole text (as session/tree gives it), for the confirmation
  label?: string; // the user's bookmark
  current: boolean; // the current position (entry) / holds it (branch)
  children: TreeItem[]; // a branch's items
}

// The conversation as a user reads it: what they said, the answers that say something, and the
// summaries standing for a branch left or a compacted start. Tool calls and results, model and
// thinking changes, names, labels and an answer that only called tools are the file's bookkeeping.
function shownRole(node: TreeNode): string | undefined {
  const text = (node.text ?? "").trim();
  if (node.type === "message" && node.role === "user") return "user";
  if (node.type === "message" && node.role === "assistant" && text) return "assistant";
  if ((node.type === "branch_summary" || node.type === "compaction") && text) return "summary";
  return undefined;
}

function title(node: TreeNode): string {
  const text = (node.text ?? "").replace(/\s+/g, " ").trim();
  const said = node.type === "message" ? `${node.role === "user" ? "you" : "pi"}: ${text || "(no text)"}`
    : node.type === "branch_summary" ? `summary of a branch left: ${text}` : `summary of the start: ${text}`;
  return said.length > 80 ? `${said.slice(0, 79)}…` : said;
}

// session/tree's nodes as the conversation's messages, a list where it is linear and one
// collapsible branch per child where it forks, so a long conversation stays flat. The current
// message is the leaf, or the last message before it when the leaf is bookkeeping.
export function outline(tree: TreeResult): TreeItem[] {
  const children = new Map<string | undefined, TreeNode[]>();
  const byId = new Map<string, TreeNode>();
  for (const node of tree.nodes) {
    const list = children.get(node.parentId) ?? [];
    list.push(node);
    children.set(node.parentId, list);
    byId.set(node.id, node);
  }
  let current = tree.leafId ? byId.get(tree.leafId) : undefined;
  while (current && !shownRole(current)) current = current.parentId === undefined ? undefined : byId.get(current.parentId);
  const branches = (heads: TreeNode[]): TreeItem[] => {
    const made = heads.map((head) => ({ head, items: chain(head) })).filter((b) => b.items.length);
    return made.map(({ head, items }, n) => ({ kind: "branch" as const, id: items[0].id, title: `branch ${n + 1} of ${made.length}`,
                                               current: Boolean(head.onPath), children: items }));
  };
  const chain = (first: TreeNode | undefined): TreeItem[] => {
    const items: TreeItem[] = [];
    for (let node = first; node; ) {
      const role = shownRole(node);
      if (role) items.push({ kind: "entry", id: node.id, title: title(node), role, text: node.text ?? "", label: node.label,
                             current: node === current, children: [] });
      const next = children.get(node.id) ?? [];
      if (next.length > 1) {
        const forks = branches(next);
        items.push(...(forks.length === 1 ? forks[0].children : forks));
        break;
      }
      node = next[0];
    }
    return items;
  };
  const roots = children.get(undefined) ?? [];
  if (roots.length <= 1) return chain(roots[0]);
  const forks = branches(roots);
  return forks.length === 1 ? forks[0].children : forks;
}

// --- the conversation, rebuilt from events ---------------------------------------------

export interface Block {
  type: string;
  text?: string;
  thinking?: string;
  name?: string;
  arguments?: JsonObject;
  id?: string;
}

export interface ChatMessage {
  role: string;
  blocks: Block[];
  streaming: boolean;
  stopReason?: string;
  errorMessage?: string;
  toolCallId?: string;
  toolName?: string;
  isError?: boolean;
  entryId?: string; // the stored entry, once the message is final
  raw?: AgentMessage;
}

export interface ToolActivity {
  toolCallId: string;
  toolName: string;
  args?: JsonObject;
  output: string;
  done: boolean;
  isError?: boolean;
}

function blocksOf(message: AgentMessage): Block[] {
  if (!("content" in message)) {
    if (message.role === "bashExecution") return [{ type: "text", text: `$ ${message.command}\n${message.output}` }];
    if ("summary" in message && typeof message.summary === "string") return [{ type: "text", text: message.summary }];
    return [];
  }
  if (typeof message.content === "string") return [{ type: "text", text: message.content }];
  if (Array.isArray(message.content)) return message.content.map((b) => ({ ...b }) as Block);
  return [];
}

// A message of a known role (a message of a role the daemon does not know has a plain string role).
export function isRole<R extends AgentMessage["role"]>(m: AgentMessage, role: R): m is Extract<AgentMessage, { role: R }> {
  return m.role === role;
}

function textOf(content: UserContent[]): string {
  return content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

export class Conversation {
  messages: ChatMessage[] = [];
  tools = new Map<string, ToolActivity>();
  queue = { steering: [] as string[], followUp: [] as string[], items: [] as { queueId: string; kind: string; text: string }[] };
  busy = false;
  lastError?: string;

  apply(event: AgentEvent): void {
    switch (event.type) {
      case "agent_start":
        this.busy = true;
        break;
      case "agent_settled":
        this.busy = false;
        break;
      case "message_start":
        this.messages.push({ role: event.message.role, blocks: blocksOf(event.message), streaming: true });
        break;
      case "message_update": {
        const current = this.messages[this.messages.length - 1];
        if (!current) break;
        const delta = event.assistantMessageEvent;
        const index = delta.contentIndex;
        const block = (current.blocks[index] ??= { type: delta.type.split("_")[0] });
        if (delta.type === "text_start") current.blocks[index] = { type: "text", text: "" };
        else if (delta.type === "thinking_start") current.blocks[index] = { type: "thinking", thinking: "" };
        else if (delta.type === "toolcall_start")
          current.blocks[index] = { type: "toolCall", id: delta.id, name: delta.toolName, text: "" };
        else if (delta.type === "text_delta") block.text = (block.text ?? "") + delta.delta;
        else if (delta.type === "thinking_delta") block.thinking = (block.thinking ?? "") + delta.delta;
        else if (delta.type === "toolcall_delta") block.text = (block.text ?? "") + delta.delta;
        else if (delta.type === "text_end") block.text = delta.content;
        else if (delta.type === "thinking_end") block.thinking = delta.content;
        else if (delta.type === "toolcall_end") current.blocks[index] = { ...delta.toolCall };
        break;
      }
      case "message_end": {
        const m = event.message;
        const done: ChatMessage = { role: m.role, blocks: blocksOf(m), streaming: false, entryId: event.entryId, raw: m };
        if (isRole(m, "assistant")) Object.assign(done, { stopReason: m.stopReason, errorMessage: m.errorMessage ?? undefined });
        if (isRole(m, "toolResult")) Object.assign(done, { toolCallId: m.toolCallId, toolName: m.toolName, isError: m.isError });
        const last = this.messages[this.messages.length - 1];
        if (last && last.streaming && last.role === m.role) this.messages[this.messages.length - 1] = done;
        else this.messages.push(done);
        if (isRole(m, "assistant") && m.stopReason === "error") this.lastError = m.errorMessage ?? undefined;
        break;
      }
      case "tool_execution_start":
        this.tools.set(event.toolCallId, { toolCallId: event.toolCallId, toolName: event.toolName, args: event.args, output: "", done: false });
        break;
      case "tool_execution_update": {
        const tool = this.tools.get(event.toolCallId);
        if (tool) tool.output = textOf(event.partialResult?.content ?? []);
        break;
      }
      case "tool_execution_end": {
        const tool = this.tools.get(event.toolCallId);
        if (tool) {
          tool.done = true;
          tool.isError = event.isError;
          tool.output = textOf(event.result.content);
        }
        break;
      }
      case "queue_update":
        this.queue = { steering: event.steering, followUp: event.followUp, items: event.items ?? [] };
        break;
    }
  }

  text(): string {
    return this.messages
      .filter((m) => m.role === "assistant")
      .map((m) => m.blocks.filter((b) => b.type === "text").map((b) => b.text).join(""))
      .join("\n");
  }
}
