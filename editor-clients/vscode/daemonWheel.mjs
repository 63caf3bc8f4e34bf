// Builds the pi-daemon wheel from the repository root into dist/daemon, where the .vsix carries it:
// "Install pi-daemon" pip-installs it into the extension's own venv (src/daemonInstall.ts).
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { resolve } from "node:path";

const here = resolve(new URL(".", import.meta.url).pathname);
const out = resolve(here, "dist", "daemon");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const python = process.env.PI_DAEMON_PYTHON ?? "python3";
execFileSync(python, ["-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps", resolve(here, "..", ".."), "-w", out],
             { stdio: ["ignore", "inherit", "inherit"] });
