"""Keypress -> first glyph of the answer in Neovim (pi.nvim) under tmux, against the loopback
OpenAI-compatible streaming server of bench/peers.py (its own process; the daemon reaches it
through a models.json provider, so the first prompt pays the real provider's import and request).

Neovim runs in a real terminal (a tmux session); `:Pi hello` is typed, then the time is taken
just before `tmux send-keys Enter`, and `tmux capture-pane` is read in a tight loop until the
first glyph of the answer is on the screen (the chat's first answer line under the new `## pi`).
The error of one figure is the time one capture takes (reported: its median), plus the
send-keys round trip (reported too), both on the side of a longer figure. Beside each figure,
"received": Enter -> the answer's first text delta received by the plugin, on Neovim's clock
(`vim.on_key` and the plugin's `on_receive` hook); the rest is drawing it.

For each run and each connection mode (setup's `connection`: "attach", the default, and "child"):
  * cold, no pre-start: Neovim opened in a workspace where pi was never used (a fresh state
    folder), the first prompt spawns the daemon (the behaviour before the plugin started it);
  * warm: a second prompt in the same Neovim;
  * Neovim quit (attach: its server stopped), opened again: the workspace is now "used", the
    plugin starts the daemon at once; open -> daemon ready (the statusline shows the model) is
    reported, then cold with pre-start: the first prompt once it is ready; and warm again;
  * the same once more, the first prompt typed IDLE_S seconds after the daemon is ready (what
    the daemon still does after `initialize` is answered is over by then).

Run: .venv/bin/python bench/nvim_first_glyph.py [--runs 5] [--connection attach|child]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from common import precompile
from peers import Daemon, ModelServer

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "editor-clients" / "nvim"
NVIM = Path(sys.executable).parent / "nvim"

IDLE_S = 5  # the last cold prompt comes this long after the daemon answered

INIT = """
vim.opt.runtimepath:prepend(%(plugin)s)
vim.cmd("runtime plugin/pi.lua")
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. "I"
vim.o.laststatus = 2
vim.o.statusline = "%%f %%{v:lua.require'pi'.statusline()}"
require("pi").setup({ cmd = %(cmd)s, env = %(env)s, connection = %(connection)s, permissions = false })
-- Neovim's own clock: Enter pressed -> the answer's first text delta received (the plugin's
-- on_receive hook), one line per prompt in %(marks)s
local key
vim.on_key(function(k) if k == "\\r" then key = vim.uv.hrtime() end end)
require("pi").on_receive = function(kind, method, value)
  if key and kind == "notification" and method == "agent/event" and value.event.type == "message_update"
      and value.event.assistantMessageEvent.type == "text_delta" then
    local file = io.open(%(marks)s, "a")
    file:write(("%%.1f\\n"):format((vim.uv.hrtime() - key) / 1e6))
    file:close()
    key = nil
  end
end
"""


def lua(value) -> str:
    return "vim.json.decode(" + json.dumps(json.dumps(value)) + ")"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True).stdout


class Neovim:
    """Neovim in a tmux session of its own, in `workspace`."""

    def __init__(self, init: Path, workspace: Path, env: dict, marks: Path) -> None:
        self.name = f"pi-glyph-{uuid.uuid4().hex[:8]}"
        self.marks = marks
        self.received: list[float] = []  # per prompt: Enter -> first text delta received, Neovim's clock
        env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        self.opened = time.perf_counter()
        tmux("new-session", "-d", "-s", self.name, "-x", "160", "-y", "48", "-c", str(workspace), *env_args,
             f"{NVIM} -u {init} -i NONE")
        self.wait(lambda s: "~" in s, "the editor drawn")

    def screen(self) -> str:
        return tmux("capture-pane", "-p", "-t", self.name)

    def wait(self, seen, what: str, timeout: float = 120) -> str:
        deadline = time.monotonic() + timeout
        while not seen(screen := self.screen()):
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not on the screen after {timeout} s:\n{screen}")
            time.sleep(0.02)
        return screen

    def quit(self) -> None:
        tmux("send-keys", "-t", self.name, "Escape")
        tmux("send-keys", "-t", self.name, "-l", ":qa!")
        tmux("send-keys", "-t", self.name, "Enter")
        deadline = time.monotonic() + 30
        while subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True).returncode == 0:
            if time.monotonic() > deadline:
                subprocess.run(["tmux", "kill-session", "-t", self.name], check=False)
                break
            time.sleep(0.05)


def answers(screen: str) -> tuple[int, bool, bool]:
    """How many answers the chat shows (its `## pi` rows), whether the last has a glyph yet
    (the answer is "xxx…"; the chat is the right-hand window, after the `│` border) and whether
    it ended (the chat's end-of-turn mark `—` under it)."""
    rows = [row.split("│", 1)[1].rstrip() for row in screen.splitlines() if "│" in row]
    heads = [i for i, row in enumerate(rows) if row == "## pi"]
    after = rows[heads[-1] + 1:] if heads else []
    return len(heads), any(row.startswith("x") for row in after), "—" in after


def prompt(nvim: Neovim, text: str, nth: int, captures: list[float]) -> tuple[float, float]:
    """Types `:Pi text`, presses Enter; seconds from the keypress to the first glyph of the
    `nth` answer, and the send-keys round trip."""
    nvim.marks.write_text("")
    tmux("send-keys", "-t", nvim.name, "Escape")
    tmux("send-keys", "-t", nvim.name, "-l", f":Pi {text}")
    nvim.wait(lambda s: f":Pi {text}" in s, "the typed command")
    pressed = time.perf_counter()
    tmux("send-keys", "-t", nvim.name, "Enter")
    sent = time.perf_counter() - pressed
    deadline = time.monotonic() + 120
    while True:
        before = time.perf_counter()
        screen = nvim.screen()
        now = time.perf_counter()
        captures.append(now - before)
        count, glyph, _ = answers(screen)
        if count == nth and glyph:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"answer {nth} never came:\n{screen}")
    nvim.wait(lambda s: answers(s)[2], "the answer's end")  # the next prompt is not a steer
    nvim.received.append(float(nvim.marks.read_text().split()[0]) / 1000)
    return now - pressed, sent


def daemon_pids(runtime: str) -> list[int]:
    """The `pi-daemon serve` processes started with XDG_RUNTIME_DIR=`runtime`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and b"serve" in (entry / "cmdline").read_bytes().split(b"\0") and (
                    f"XDG_RUNTIME_DIR={runtime}".encode() in (entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def stop_servers(runtime: str) -> None:
    deadline = time.monotonic() + 30
    while pids := daemon_pids(runtime):
        for pid in pids:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"servers still running under {runtime}: {pids}")
        time.sleep(0.1)


def one_run(root: Path, server: ModelServer, connection: str, captures: list[float]) -> dict[str, float]:
    run = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    workspace = run / "work"
    workspace.mkdir()
    env = Daemon.setup(run, server)
    runtime = tempfile.mkdtemp(prefix="pirt-")  # short: the socket's path must stay under 108 bytes
    daemon_env = {"PI_DAEMON_HOME": env["PI_DAEMON_HOME"], "HOME": env["HOME"], "XDG_RUNTIME_DIR": runtime}
    init = run / "init.lua"
    cmd = [sys.executable, "-m", "pi_daemon", "--model", "local/bench"]
    if connection == "attach":
        cmd += ["--idle-timeout", "60"]  # an option of `attach` (the server's)
    marks = run / "marks.txt"
    init.write_text(INIT % {"plugin": lua(str(PLUGIN)), "cmd": lua(cmd), "env": lua(daemon_env),
                            "connection": lua(connection), "marks": lua(str(marks))})
    nvim_env = {"XDG_STATE_HOME": str(run / "state"), "XDG_RUNTIME_DIR": runtime}
    (run / "home").mkdir(exist_ok=True)
    out: dict[str, float] = {}
    nvim = None
    try:
        server.script(*[{"text": 20}] * 5)  # one per prompt below
        nvim = Neovim(init, workspace, nvim_env, marks)  # never used: nothing started
        out["cold, no pre-start"], out["send-keys"] = prompt(nvim, "hello", 1, captures)
        out["warm"], _ = prompt(nvim, "again", 2, captures)
        out["  received: cold, no pre-start"], out["  received: warm"] = nvim.received
        nvim.quit()
        stop_servers(runtime)
        nvim = Neovim(init, workspace, nvim_env, marks)  # used: the daemon starts with Neovim
        nvim.wait(lambda s: "π local/bench" in s, "the model in the statusline")
        out["open -> daemon ready"] = time.perf_counter() - nvim.opened
        out["cold, pre-started"], _ = prompt(nvim, "hello", 1, captures)
        out["warm, pre-started"], _ = prompt(nvim, "again", 2, captures)
        out["  received: cold, pre-started"], out["  received: warm, pre-started"] = nvim.received
        nvim.quit()
        stop_servers(runtime)
        nvim = Neovim(init, workspace, nvim_env, marks)  # used again; the user types a few seconds later
        nvim.wait(lambda s: "π local/bench" in s, "the model in the statusline")
        time.sleep(IDLE_S)  # the user's pause, not a wait for the daemon
        out[f"cold, pre-started, +{IDLE_S} s"], _ = prompt(nvim, "hello", 1, captures)
        out[f"  received: cold, pre-started, +{IDLE_S} s"], = nvim.received
        nvim.quit()
    finally:
        if nvim:
            subprocess.run(["tmux", "kill-session", "-t", nvim.name], check=False, capture_output=True)
        stop_servers(runtime)
        shutil.rmtree(runtime, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--connection", choices=["attach", "child"], action="append")
    args = parser.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed")
    precompile()
    connections = args.connection or ["attach", "child"]
    figures: dict[str, dict[str, list[float]]] = {c: {} for c in connections}
    captures: list[float] = []
    server = ModelServer()
    try:
        with tempfile.TemporaryDirectory(prefix="pi-glyph-") as tmp:
            for _ in range(args.runs):
                for connection in connections:  # interleaved: both see the same machine load
                    for key, value in one_run(Path(tmp), server, connection, captures).items():
                        figures[connection].setdefault(key, []).append(value)
    finally:
        server.close()
    print(f"medians of {args.runs} runs (ms); one capture-pane: {statistics.median(captures) * 1000:.1f} ms")
    for connection, rows in figures.items():
        print(f"connection = {connection}")
        for key, values in rows.items():
            print(f"  {key:36} {statistics.median(values) * 1000:8.0f}   "
                  f"[{', '.join(f'{v * 1000:.0f}' for v in values)}]")


if __name__ == "__main__":
    main()
