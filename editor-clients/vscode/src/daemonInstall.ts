// Installing pi-daemon for a user who has none: a venv in the extension's storage, made with the first
// Python >= 3.11 found, into which pip installs the pi-daemon wheel shipped inside the .vsix (its
// dependencies come from the package index pip is set up to use). No `vscode` import: node tests run it.

import { existsSync, readdirSync, rmSync } from "fs";
import { join } from "path";
import { managedVenv, run } from "./daemonLocator";

export const PYTHON_CANDIDATES = process.platform === "win32"
  ? ["python3.13", "python3.12", "python3.11", "python3", "python", "py"]
  : ["python3.13", "python3.12", "python3.11", "python3", "python"];

// The first of `candidates` (the selected interpreter first, when there is one) that runs as Python
// 3.11 or newer; when none does, an error naming every Python found and its version.
export async function findPython(candidates: string[]): Promise<{ python: string; version: string }> {
  const found: string[] = [];
  for (const python of candidates) {
    const answer = await run(python, ["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"]);
    const version = answer.output.trim().split("\n").pop() ?? "";
    if (answer.code !== 0 || !/^\d+\.\d+\.\d+$/.test(version)) continue;
    const [major, minor] = version.split(".").map(Number);
    if (major > 3 || (major === 3 && minor >= 11)) return { python, version };
    found.push(`${python} (${version})`);
  }
  throw new Error(found.length
    ? `pi-daemon needs Python 3.11 or newer; found only ${found.join(", ")}. Install Python 3.11+ or set pi.command.`
    : `pi-daemon needs Python 3.11 or newer and none was found (looked for ${candidates.join(", ")}). Install Python 3.11+ or set pi.command.`);
}

export function bundledWheel(wheelDir: string): string {
  const wheels = existsSync(wheelDir) ? readdirSync(wheelDir).filter((f) => /^pi_daemon-.*\.whl$/.test(f)) : [];
  if (!wheels.length) throw new Error(`this build of the extension holds no pi-daemon wheel (looked in ${wheelDir})`);
  return join(wheelDir, wheels.sort().pop()!);
}

// Makes the venv and pip-installs the wheel into it; `log` hears every line, `step` each stage.
// Returns the installed pi-daemon program.
export async function installDaemon({ python, storageDir, wheelDir, log, step = () => {} }: {
  python: string; storageDir: string; wheelDir: string; log: (text: string) => void; step?: (what: string) => void;
}): Promise<string> {
  const wheel = bundledWheel(wheelDir);
  const venv = managedVenv(storageDir);
  const stage = async (what: string, command: string, args: string[]) => {
    step(what);
    log(`$ ${command} ${args.join(" ")}\n`);
    const done = await run(command, args, { timeoutMs: 15 * 60_000, onOutput: log });
    if (done.code !== 0) {
      const tail = done.output.trim().split("\n").slice(-3).join(" ");
      throw new Error(`${what} failed (${done.code === null ? "it could not run" : `exit code ${done.code}`}): ${tail}`);
    }
  };
  rmSync(venv.dir, { recursive: true, force: true }); // a half-made venv from an earlier try
  // -I: isolated from the current folder (a venv or pip folder there would run instead) and from PYTHON* variables
  await stage(`Creating a Python environment with ${python}`, python, ["-I", "-m", "venv", venv.dir]);
  await stage("Installing pi-daemon and its dependencies", venv.python,
              ["-I", "-m", "pip", "install", "--disable-pip-version-check", wheel]);
  if (!existsSync(venv.daemon)) throw new Error(`pip finished but ${venv.daemon} is not there`);
  log(`pi-daemon installed: ${venv.daemon}\n`);
  return venv.daemon;
}
