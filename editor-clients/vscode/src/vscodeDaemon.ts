// Which daemon the extension starts, from VS Code's side: the user's settings (never a workspace's: a
// repository's .vscode/settings.json could otherwise name a program to run, or add --yes), the Python
// interpreter the Python extension has selected, and "Install pi-daemon" when none is found.

import * as vscode from "vscode";
import { Connection, DaemonCommand, attachArgs, locateDaemon } from "./daemonLocator";
import { PYTHON_CANDIDATES, findPython, installDaemon } from "./daemonInstall";

function users<T>(section: string, key: string, fallback: T): T {
  const found = vscode.workspace.getConfiguration(section).inspect<T>(key);
  return found?.globalValue ?? found?.defaultValue ?? fallback;
}

// The Python extension's selected interpreter (as ruff's extension asks it), else the user's
// python.defaultInterpreterPath. An untrusted workspace's choice of interpreter is not run.
async function interpreter(): Promise<string | undefined> {
  if (vscode.workspace.isTrusted) try {
    const python = vscode.extensions.getExtension("ms-python.python");
    const api: any = python && (python.isActive ? python.exports : await python.activate());
    const environments = api?.environments;
    if (environments) {
      const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath());
      const path = resolved?.executable?.uri?.fsPath;
      if (path) return path;
    }
  } catch {} // no Python extension, or one without the environments API: the setting decides
  const configured = users<string>("python", "defaultInterpreterPath", "");
  return configured || undefined;
}

// The daemon with the arguments the settings add, for `workspace`; undefined when there is none to start.
export async function daemonCommand(storageDir: string, workspace: string):
    Promise<(DaemonCommand & { configured: boolean; connection: Connection }) | undefined> {
  const command = users<string>("pi", "command", "");
  const extra = users<string[]>("pi", "args", []);
  const found = await locateDaemon({ configured: command ? { command, args: [] } : undefined,
                                     interpreter: await interpreter(), storageDir });
  if (!found) return undefined;
  const config = vscode.workspace.getConfiguration("pi");
  const args = [...found.args, ...extra, "--log-level", config.get("logLevel", "warning")];
  const model = config.get<string>("model", "");
  if (model) args.push("--model", model);
  const connection = users<string>("pi", "connection", "attach") === "child" ? "child" : "attach";
  return { ...found, args: connection === "attach" ? attachArgs(args, workspace) : args, configured: Boolean(command), connection };
}

// Asks before installing (then install). True once installed.
export async function offerInstall(context: vscode.ExtensionContext, output: vscode.OutputChannel): Promise<boolean> {
  const choice = await vscode.window.showWarningMessage(
    "pi: pi-daemon is not installed (not in the pi.command setting, not on PATH, not in the selected Python interpreter). " +
    "Install it into the extension's own Python environment?", "Install pi-daemon", "Show Log");
  if (choice === "Show Log") output.show(true);
  return choice === "Install pi-daemon" && install(context, output);
}

// Installs with progress (every line in the log); "pi: Install pi-daemon" runs it without asking first.
// True once installed.
export async function install(context: vscode.ExtensionContext, output: vscode.OutputChannel): Promise<boolean> {
  const storageDir = context.globalStorageUri.fsPath;
  const wheelDir = vscode.Uri.joinPath(context.extensionUri, "dist", "daemon").fsPath;
  output.show(true);
  try {
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "pi: installing pi-daemon", cancellable: false },
      async (progress) => {
        progress.report({ message: "looking for Python 3.11 or newer…" });
        const selected = await interpreter();
        const { python, version } = await findPython([...(selected ? [selected] : []), ...PYTHON_CANDIDATES]);
        output.append(`Installing pi-daemon with ${python} (Python ${version})\n`);
        await installDaemon({ python, storageDir, wheelDir, log: (text) => output.append(text),
                              step: (what) => progress.report({ message: `${what}…` }) });
      });
  } catch (error: any) {
    output.append(`Installing pi-daemon failed: ${error.message ?? error}\n`);
    vscode.window.showErrorMessage(`pi: installing pi-daemon failed: ${error.message ?? error}`, "Show Log")
      .then((c) => c && output.show(true));
    return false;
  }
  vscode.window.showInformationMessage("pi: pi-daemon is installed.");
  return true;
}
