"""A daemon that outlives Neovim (setup's connection = "attach"), in a real terminal Neovim
under tmux typed into as a user (the helpers of test_terminal.py): a slow answer streaming,
`:qa` mid-answer, Neovim opened again on the workspace: the conversation and the answer still
streaming are there, and it streams to its end.

The test has its own XDG_RUNTIME_DIR (where the server's socket is) and state folder (where the
plugin keeps the session), and stops the server it started.

Run: .venv/bin/python -m pytest editor-clients/nvim/tests/test_terminal_attach.py
(PI_NVIM_SCREENS=folder keeps the screens as text.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from test_terminal import keep_figure, open_terminal, stop_servers

STORY = "\n".join(f"story line {i}" for i in range(1, 91)) + "\nThe end of the story."
REPLIES = [
    {"content": [{"type": "text", "text": "First answer."}]},
    {"content": [{"type": "text", "text": STORY}]},
]


def servers(runtime: str) -> list[dict]:
    """The servers `pi-daemon ps --json` lists under `runtime`."""
    out = subprocess.run([sys.executable, "-m", "pi_daemon", "ps", "--json"], capture_output=True, text=True,
                         env={**os.environ, "XDG_RUNTIME_DIR": runtime}, check=True)
    return json.loads(out.stdout)


def gone(session: str, timeout: float = 15) -> None:
    """Waits until the tmux session `session` has ended (Neovim quit)."""
    deadline = time.monotonic() + timeout
    while subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0:
        if time.monotonic() > deadline:
            raise AssertionError(f"Neovim in {session} did not quit")
        time.sleep(0.1)


@pytest.fixture
def attached(tmp_path):
    """Opens Neovim (attach mode) on tmp_path's workspace, each call a new one; the server stopped at the end."""
    runtime = tempfile.mkdtemp(prefix="pirt-")  # short: the socket's path must stay under 108 bytes
    env = {"XDG_RUNTIME_DIR": runtime, "XDG_STATE_HOME": str(tmp_path / "state")}
    opened = []

    def open_neovim():
        terminal = open_terminal(tmp_path, REPLIES, connection="attach", nvim_env=env, delay_ms=30)
        opened.append(terminal)
        return next(terminal)

    try:
        yield open_neovim, runtime
    finally:
        for terminal in opened:
            terminal.close()  # its tmux session killed
        stop_servers(runtime)  # also one an exiting Neovim started again on its way out


def test_neovim_quit_mid_answer_and_opened_again_finds_it_still_streaming(attached):
    open_neovim, runtime = attached
    term = open_neovim()
    term.command("Pi remember this")
    term.wait_for("First answer.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    term.command("Pi tell me a long story")
    term.wait_for("story line 5")
    term.capture("attach-before-quit")
    term.command("qa")  # mid-answer
    gone(term.name)

    running = servers(runtime)
    assert len(running) == 1 and running[0]["workspace"] == str(term.workspace.resolve()), running

    started = time.monotonic()
    term = open_neovim()  # the same workspace, a new Neovim
    screen = term.wait_for("First answer.")  # the conversation, without typing anything
    keep_figure("attach-reopen-to-conversation", started)
    assert "remember this" in screen and "tell me a long story" in screen
    screen = term.wait_for("pi is working")  # the run still going on, shown as such
    assert "The end of the story." not in screen
    seen = term.evaluate("len(filter(getbufline(bufnr('pi://chat'), 1, '$'), 'v:val =~# \"^story line\"'))")
    term.capture("attach-reopened-streaming")
    screen = term.wait_for("The end of the story.", timeout=60)  # it streams to its end
    term.wait_gone("pi is working")
    assert int(seen) < 90
    lines = term.evaluate("len(filter(getbufline(bufnr('pi://chat'), 1, '$'), 'v:val =~# \"^story line\"'))")
    assert lines == "90", lines  # every line once: nothing missed, nothing twice
    assert term.evaluate("len(filter(getbufline(bufnr('pi://chat'), 1, '$'), 'v:val ==# \"tell me a long story\"'))") == "1"
    term.capture("attach-reopened-done")
    term.command("PiInfo")
    screen = term.wait_for("daemon: shared server, pid")
    term.capture("attach-piinfo")
