"""Keypress -> first glyph of the answer in VS Code (code-server in headless Chromium), cold and warm.

Runs ``editor-clients/vscode/e2e/bench42-glyph.mjs`` (what it measures and how is said there): the Enter
keydown in the chat input to the answer's first glyph painted in the chat page, on the page's own clock,
against a loopback model server speaking the OpenAI stream. COLD is a window's first prompt, WARM its second;
"used" is a workspace where pi was used before (with this build its daemon is started when the window
opens), "fresh" one where it never was. Medians of ``--runs``.

``--against REV`` measures the VS Code extension of a git revision too (its ``editor-clients/vscode``
exported and packaged in a temporary folder), after this tree's, with the same daemon (this tree's, from
``PI_DAEMON_PYTHON``, default ``.venv/bin/python``): only the extension differs.

Run: .venv/bin/python bench/vscode_glyph.py [--runs 5] [--pause 8000] [--connection child] [--against REV]
     .venv/bin/python bench/vscode_glyph.py --check   (one run: checks it works, not its speed)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
VSCODE = REPO / "editor-clients" / "vscode"


def package(folder: Path, env: dict[str, str]) -> Path:
    """The .vsix of the extension in ``folder``, built there."""
    subprocess.run(["npm", "run", "package", "--silent"], cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL)
    return folder / "pi-daemon.vsix"


def exported(rev: str, into: Path, env: dict[str, str]) -> Path:
    """``rev``'s extension packaged in ``into`` (its wheel built from ``rev``'s daemon, not used here)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "editor-clients/vscode", "pi_daemon",
                              "pyproject.toml", "README.md", "LICENSE"], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    folder = into / "editor-clients" / "vscode"
    (folder / "node_modules").symlink_to(VSCODE / "node_modules")
    return package(folder, env)


def measure(vsix: Path, cache: str, args: argparse.Namespace, env: dict[str, str], out: Path) -> dict[str, Any]:
    command = ["node", "e2e/bench42-glyph.mjs", cache, "--runs", str(args.runs), "--pause", str(args.pause),
               "--connection", args.connection]
    run = subprocess.run(command, cwd=VSCODE, env={**env, "PI_E2E_VSIX": str(vsix), "PI_E2E_OUT": str(out)},
                         capture_output=True, text=True)
    lines = run.stdout.strip().splitlines()
    if run.returncode or not lines:
        raise SystemExit(f"the bench failed:\n{run.stdout}\n{run.stderr}")
    for line in lines[:-1]:
        if line.startswith("run "):
            print(f"  {line}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def table(name: str, result: dict[str, Any]) -> None:
    for which in ("used", "fresh"):
        r = result[which]
        print(f"{name:>12} {which:>5}: cold {r['cold']['frame']:6.0f} ms (prompt shown {r['cold']['echo']:5.0f})"
              f"  warm {r['warm']['frame']:5.0f} ms (prompt shown {r['warm']['echo']:4.0f})"
              f"  daemon up {r['up']} ms after the window, before the chat was clicked in {r['upBefore']}/{r['runs']}"
              f"  (cold runs {r['cold']['all']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pause", type=int, default=8000, help="ms the user waits after the window opens")
    parser.add_argument("--connection", choices=["child", "attach"], default="child")
    parser.add_argument("--against", metavar="REV", help="also measure this git revision's extension")
    parser.add_argument("--check", action="store_true", help="one run, to check it works")
    args = parser.parse_args()
    if args.check:
        args.runs = 1
    python = os.environ.get("PI_DAEMON_PYTHON", str(REPO / ".venv" / "bin" / "python"))
    env = {**os.environ, "PI_DAEMON_PYTHON": python}
    cache = subprocess.run([str(VSCODE / "e2e" / "install.sh")], cwd=VSCODE, check=True, capture_output=True,
                           text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="pi-glyph-") as temp:
        root = Path(temp)
        builds = {"this tree": package(VSCODE, env)}
        if args.against:
            (root / "against").mkdir()
            builds[args.against] = exported(args.against, root / "against", env)
        print(f"keypress -> first glyph, ms (medians of {args.runs}; pause {args.pause} ms; {args.connection})")
        results: dict[str, dict[str, Any]] = {}
        for name, vsix in builds.items():
            print(name)
            results[name] = measure(vsix, cache, args, env, root / "out" / name.replace("/", "_"))
        for name, result in results.items():
            table(name, result)


if __name__ == "__main__":
    main()
