"""The daemon started before it is asked for (lua/pi/used.lua), in a real terminal Neovim under
tmux typed into as a user (the helpers of test_terminal.py), in both connection modes: a prompt
sent in a workspace makes it "used"; Neovim opened there again has its daemon running before
anything is typed, and the first prompt is answered by it; Neovim opened in a never-used
workspace starts none — until :cd goes to the used one.

Each Neovim has its own XDG_RUNTIME_DIR (where an attach server's socket is), they share one
state folder (where the plugin keeps its list), and every server started is stopped.

Run: .venv/bin/python -m pytest editor-clients/nvim/tests/test_terminal_prestart.py
(PI_NVIM_SCREENS=folder keeps the screens as text.)
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from test_terminal import open_terminal, server_pids, stop_servers
from test_terminal_attach import gone

REPLIES = [{"content": [{"type": "text", "text": "First answer."}]}]


def descendants(pid: int) -> list[int]:
    """The processes under `pid` (children, their children, ...)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def daemons(term, runtime: str) -> list[int]:
    """The daemon processes of the Neovim in `term`: its pi_daemon descendants (the daemon in
    child mode, the `attach` bridge in attach mode) and the servers started under `runtime`."""
    pane = int(subprocess.run(["tmux", "display", "-p", "-t", term.name, "#{pane_pid}"], check=True,
                              capture_output=True, text=True).stdout)
    mine = []
    for pid in descendants(pane):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"pi_daemon" in argv and b"ps" not in argv:  # not `pi-daemon ps`, which lists servers
                mine.append(pid)
        except OSError:
            continue
    return mine + server_pids(runtime)


def wait_daemon(term, runtime: str, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while not (found := daemons(term, runtime)):
        if time.monotonic() > deadline:
            raise AssertionError(f"no daemon started:\n{term.screen()}")
        time.sleep(0.05)
    return found


@pytest.fixture
def neovims(tmp_path):
    """Opens Neovim on a workspace (a folder under tmp_path) with its own runtime folder, the state
    folder shared; returns (terminal, runtime). Everything it started is stopped at the end."""
    state = tmp_path / "state"
    opened, runtimes = [], []

    def open_neovim(folder: str, connection: str, extra: str = ""):
        runtime = tempfile.mkdtemp(prefix="pirt-")  # short: the socket's path must stay under 108 bytes
        runtimes.append(runtime)
        (tmp_path / folder).mkdir(exist_ok=True)
        terminal = open_terminal(tmp_path / folder, REPLIES, connection=connection, extra=extra,
                                 nvim_env={"XDG_STATE_HOME": str(state), "XDG_RUNTIME_DIR": runtime})
        opened.append(terminal)
        return next(terminal), runtime

    try:
        yield open_neovim, state
    finally:
        for terminal in opened:
            terminal.close()  # its tmux session killed
        for runtime in runtimes:
            stop_servers(runtime)


@pytest.mark.parametrize("connection", ["child", "attach"])
def test_a_used_workspace_has_its_daemon_up_before_anything_is_typed_a_never_used_one_none(neovims, connection):
    open_neovim, state = neovims
    term, runtime = open_neovim("used", connection)
    term.command("Pi remember this place")
    term.wait_for("First answer.")
    used = str(term.workspace.resolve())
    kept = state / "nvim" / "pi" / "workspaces.json"  # stdpath("state")/pi
    deadline = time.monotonic() + 30
    while not (kept.exists() and used in json.loads(kept.read_text())):
        assert time.monotonic() < deadline, "the workspace was not kept as used"
        time.sleep(0.05)
    term.command("qa")
    gone(term.name)
    stop_servers(runtime)  # attach: the server outlived Neovim; opened again, none runs

    # A never-used workspace (Neovim's current folder, setup without cwd), then the used one.
    never, never_runtime = open_neovim("never", connection, extra='require("pi").config.cwd = nil\n')
    again, again_runtime = open_neovim("used", connection)
    wait_daemon(again, again_runtime)  # nothing typed
    again.wait_for("π faux/script · ask")  # the statusline: the daemon answered, still nothing typed
    again.capture(f"prestart-{connection}-used-opened")
    assert never.evaluate("getcwd()") == str(never.workspace)  # its start is long over
    assert daemons(never, never_runtime) == [], "a daemon started where pi was never used"
    never.capture(f"prestart-{connection}-never-used-opened")

    again.command("Pi and now")
    screen = again.wait_for("First answer.")  # the daemon started before is the one answering
    assert "and now" in screen
    again.capture(f"prestart-{connection}-used-first-answer")

    never.command(f"cd {again.workspace}")  # :cd to the used workspace
    wait_daemon(never, never_runtime)
