// Where the daemon is, looked for as the VS Code Python tools extensions do (ruff, the pygls template):
// the `pi.command` the user set, else `pi-daemon` on PATH, else the selected Python interpreter when it
// has the pi_daemon module, else the venv the extension installed it into (daemonInstall.ts).
// No `vscode` import: node tests drive it; vscodeDaemon.ts feeds it the settings and the interpreter.

import { spawn } from "child_process";
import { existsSync, statSync } from "fs";
import { delimiter, join } from "path";

export interface DaemonCommand {
  command: string;
  args: string[];
  source: string; // where it was found, for the log: "pi.command", "PATH", "interpreter", "installed"
}

export interface Places {
  configured?: { command: string; args: string[] }; // the user's pi.command (user settings only)
  interpreter?: string; // the selected Python interpreter
  storageDir: string; // the extension's globalStorage: the managed venv lives in it
  pathEnv?: string;
}

const windows = process.platform === "win32";

// The venv the extension installs pi-daemon into, and its programs.
export function managedVenv(storageDir: string): { dir: string; python: string; daemon: string } {
  const dir = join(storageDir, "daemon-venv");
  const bin = join(dir, windows ? "Scripts" : "bin");
  return { dir, python: join(bin, windows ? "python.exe" : "python"), daemon: join(bin, windows ? "pi-daemon.exe" : "pi-daemon") };
}

export function onPath(name: string, pathEnv = process.env.PATH ?? ""): string | undefined {
  for (const dir of pathEnv.split(delimiter).filter(Boolean)) {
    for (const candidate of windows ? [`${name}.exe`, `${name}.cmd`] : [name]) {
      const full = join(dir, candidate);
      try {
        if (statSync(full).isFile()) return full;
      } catch {}
    }
  }
  return undefined;
}

// Runs a program to its end (at most `timeoutMs`): its exit code (null: it could not run) and output,
// each piece of which also goes to `onOutput` as it comes.
export function run(command: string, args: string[],
                    { timeoutMs = 15_000, onOutput }: { timeoutMs?: number; onOutput?: (text: string) => void } = {}):
    Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    let output = "";
    let child;
    try {
      child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    } catch (error: any) {
      resolve({ code: null, output: String(error.message ?? error) });
      return;
    }
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    const take = (d: Buffer) => {
      output += d;
      onOutput?.(d.toString());
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    child.on("error", (error) => {
      clearTimeout(timer);
      resolve({ code: null, output: error.message });
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

export async function hasModule(python: string): Promise<boolean> {
  // -P: the current folder is not searched (else a folder named pi_daemon there would be found)
  const found = await run(python, ["-P", "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('pi_daemon') else 3)"]);
  return found.code === 0;
}

export async function locateDaemon(places: Places): Promise<DaemonCommand | undefined> {
  if (places.configured?.command) return { ...places.configured, source: "pi.command" };
  const found = onPath("pi-daemon", places.pathEnv);
  if (found) return { command: found, args: [], source: "PATH" };
  if (places.interpreter && (await hasModule(places.interpreter)))
    // -P (Python 3.11+, which pi-daemon needs): `-m` would put the daemon's working folder, the
    // untrusted workspace, first on the import path, and a pi_daemon folder there would run instead.
    return { command: places.interpreter, args: ["-P", "-m", "pi_daemon"], source: "interpreter" };
  const venv = managedVenv(places.storageDir);
  if (existsSync(venv.daemon)) return { command: venv.daemon, args: [], source: "installed" };
  return undefined;
}

// How the extension reaches the daemon (the pi.connection setting): "attach" — through `pi-daemon attach`,
// to the workspace's server, which outlives the window (a reload finds a run still going) and serves other
// clients too; "child" — a daemon of its own, ended with the window.
export type Connection = "attach" | "child";

// The command line of attach mode: `attach --workspace W` goes after the program's own start (a Python's
// `-m pi_daemon`, in the arguments found or in pi.args) and before the options, which attach passes on to
// the server it starts.
export function attachArgs(args: string[], workspace: string): string[] {
  const module = args.findIndex((arg, i) => arg === "-m" && args[i + 1] === "pi_daemon");
  const at = module >= 0 ? module + 2 : 0;
  return [...args.slice(0, at), "attach", "--workspace", workspace, ...args.slice(at)];
}
