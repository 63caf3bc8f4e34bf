"""pi.nvim in a real terminal Neovim under tmux, driven as a user: keys typed with
`tmux send-keys`, the screen read with `tmux capture-pane`, against the real daemon with a
scripted faux model. The `vim.ui.select` in use is an asynchronous picker (a floating list
answered by a later key press, as dressing / snacks / telescope do).

Run: .venv/bin/python -m pytest editor-clients/nvim/tests/test_terminal.py
(PI_NVIM_SCREENS=folder keeps the screens of the #29 flows there as text.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[1]
NVIM = Path(sys.executable).parent / "nvim"

# An asynchronous vim.ui.select: a floating numbered list; the choice comes later, from a key.
INIT = r"""
vim.opt.runtimepath:prepend(%(plugin)s)
vim.opt.runtimepath:append(%(help)s)
vim.cmd("runtime plugin/pi.lua")
vim.o.swapfile = false
vim.o.shortmess = vim.o.shortmess .. "I"
vim.ui.select = function(items, opts, on_choice)
  local lines = { opts.prompt or "Select" }
  for i, item in ipairs(items) do
    table.insert(lines, i .. ". " .. (opts.format_item and opts.format_item(item) or tostring(item)))
  end
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local width = 0
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  local win = vim.api.nvim_open_win(buf, true, { relative = "editor", row = 2, col = 2, width = width + 2,
                                                 height = #lines, border = "single", style = "minimal" })
  for i = 1, #items do
    vim.keymap.set("n", tostring(i), function()
      vim.api.nvim_win_close(win, true)
      on_choice(items[i], i)
    end, { buffer = buf })
  end
  vim.keymap.set("n", "q", function() vim.api.nvim_win_close(win, true) on_choice(nil) end, { buffer = buf })
end
vim.o.statusline = "%%f %%{v:lua.require'pi'.statusline()}"
require("pi").setup({ cmd = %(cmd)s, env = %(env)s, cwd = %(cwd)s, connection = %(connection)s })
"""


def keep_figure(name: str, started: float) -> None:
    """Keeps the seconds since `started` in $PI_NVIM_SCREENS/<name>.txt (when that is set)."""
    folder = os.environ.get("PI_NVIM_SCREENS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.txt").write_text(f"{time.monotonic() - started:.1f} s\n")


def lua(value) -> str:
    return "vim.json.decode(" + json.dumps(json.dumps(value)) + ")"


class Terminal:
    def __init__(self, name: str):
        self.name = name

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, *keys], check=True)

    def type(self, text: str) -> None:
        subprocess.run(["tmux", "send-keys", "-t", self.name, "-l", text], check=True)

    def command(self, text: str) -> None:
        self.keys("Escape")
        self.type(":" + text)
        self.keys("Enter")

    def screen(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.name], check=True,
                              capture_output=True, text=True).stdout

    def capture(self, name: str) -> None:
        """Keeps the screen as it is now in $PI_NVIM_SCREENS/<name>.txt (when that is set)."""
        folder = os.environ.get("PI_NVIM_SCREENS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / f"{name}.txt").write_text(self.screen())

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never appeared on the screen:\n{self.screen()}")

    def wait_gone(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while (screen := self.screen()) and text in screen:
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} stayed on the screen:\n{screen}")
            time.sleep(0.1)
        return screen

    def wait_until(self, expression: str, value: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while (seen := self.evaluate(expression)) != value:
            if time.monotonic() > deadline:
                raise AssertionError(f"{expression} stayed {seen!r}, not {value!r}:\n{self.screen()}")
            time.sleep(0.3)

    def evaluate(self, expression: str) -> str:
        """The value of a Vim expression, as echoed on the command line."""
        marker = uuid.uuid4().hex[:6]
        # The typed command line must not contain "marker=" itself: a screen captured before
        # Enter is handled would otherwise read the command as its own answer.
        self.command(f"echo '{marker}' . '=' . ({expression})")
        screen = self.wait_for(f"{marker}=")
        return screen.split(f"{marker}=", 1)[1].split()[0]


REPLIES = [
    {"content": [{"type": "thinking", "thinking": "plan the file"},
                 {"type": "text", "text": "Now writing the file."},
                 {"type": "toolCall", "id": "c1", "name": "write",
                  "arguments": {"path": "made.txt", "content": "by pi"}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "All written."}]},
    {"content": [{"type": "thinking", "thinking": "again"},
                 {"type": "text", "text": "\n".join(f"long line {i}" for i in range(60))}]},
]

PLAN_REPLIES = [
    {"content": [{"type": "toolCall", "id": "p1", "name": "write", "arguments": {"path": "notes.txt", "content": "x"}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "1. Write notes.txt."}]},
    {"content": [{"type": "toolCall", "id": "p2", "name": "write", "arguments": {"path": "notes.txt", "content": "x"}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Plan carried out."}]},
    {"content": [{"type": "toolCall", "id": "p3", "name": "write",
                  "arguments": {"path": "notes.txt", "content": "only the notes"}}], "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Notes written."}]},
]

SUBAGENT_REPLIES = [
    {"content": [{"type": "toolCall", "id": "t1", "name": "task",
                  "arguments": {"prompt": "child job", "description": "look around"}}], "stopReason": "toolUse"},
    {"when": "child job", "content": [{"type": "toolCall", "id": "w1", "name": "write",
                                       "arguments": {"path": "child.txt", "content": "from the child"}}],
     "stopReason": "toolUse"},
    {"when": "child job", "content": [{"type": "text", "text": "The child is done."}]},
    {"content": [{"type": "text", "text": "Parent heard back."}]},
]


def new_session(args: list[str]) -> None:
    """tmux new-session; once more if it met the server of the previous test's session exiting
    ("server exited unexpectedly")."""
    for _ in range(3):
        run = subprocess.run(["tmux", "new-session", "-d", *args], capture_output=True, text=True)
        if run.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"tmux new-session failed: {run.stderr}")


def server_pids(runtime: str) -> list[int]:
    """The `pi-daemon serve` processes started with XDG_RUNTIME_DIR=`runtime` (found by their
    environment, so one still starting counts too; a server's keeper, its child, left out)."""
    found = {}
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or b"serve" not in (entry / "cmdline").read_bytes().split(b"\0"):
                continue
            if f"XDG_RUNTIME_DIR={runtime}".encode() in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
    return [pid for pid, parent in found.items() if parent not in found]


def stop_servers(runtime: str, quiet_s: float = 3.0, timeout: float = 60.0) -> None:
    """SIGTERM to every server of `runtime` until none has been seen for `quiet_s` (an editor still
    dying may start one more through attach), then the folder removed."""
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < quiet_s:
        pids = server_pids(runtime)
        if pids:
            for pid in pids:
                os.kill(pid, signal.SIGTERM)
            while any(Path(f"/proc/{pid}").exists() for pid in pids) and time.monotonic() < deadline:
                time.sleep(0.1)
            quiet_since = time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError(f"the servers of {runtime} did not stop: {server_pids(runtime)}")
        time.sleep(0.2)
    shutil.rmtree(runtime, ignore_errors=True)


def open_terminal(tmp_path, replies, model=True, extra="", connection="child", nvim_env=None, delay_ms=15):
    """Neovim in a new tmux session on tmp_path's workspace (opened again on the same one when
    called again with the same tmp_path). `connection`: the plugin's setup option; `nvim_env`:
    Neovim's own environment besides the terminal's."""
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed (Debian package tmux; scripts/test-all installs it)")
    name = f"pi-nvim-{uuid.uuid4().hex[:8]}"
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    workspace = tmp_path / "work"
    workspace.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"modelId": "script", "chunkSize": 3, "delayMs": delay_ms, "replies": replies}))
    cmd = [sys.executable, "-m", "pi_daemon", "--faux-script", str(script)] + (["--model", "faux/script"] if model else [])
    env = {"PI_DAEMON_HOME": str(home), "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "", "OPENROUTER_API_KEY": ""}
    # :help as a plugin manager leaves it: doc/pi.txt with its tags (made in a copy, not in the plugin)
    help = tmp_path / "help"
    shutil.copytree(PLUGIN / "doc", help / "doc", dirs_exist_ok=True)
    subprocess.run([str(NVIM), "--headless", "-u", "NONE", "-i", "NONE", "-c", f"helptags {help / 'doc'}", "-c", "qa!"],
                   check=True, capture_output=True)
    init = tmp_path / "init.lua"
    init.write_text(INIT % {"plugin": lua(str(PLUGIN)), "help": lua(str(help)), "cmd": lua(cmd), "env": lua(env),
                            "cwd": lua(str(workspace)), "connection": lua(connection)} + extra)
    # the plugin's own files (the workspaces where pi was used, the sessions kept): not the user's
    nvim_env = {"XDG_STATE_HOME": str(tmp_path / "state"), **(nvim_env or {})}
    env_args = [arg for key, value in nvim_env.items() for arg in ("-e", f"{key}={value}")]
    new_session(["-s", name, "-x", "160", "-y", "48", "-c", str(workspace), *env_args,
                 f"{NVIM} -u {init} -i NONE"])
    term = Terminal(name)
    term.workspace = workspace
    term.home = home
    try:
        term.wait_for("~")  # the editor is drawn
        yield term
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


@pytest.fixture
def terminal(tmp_path):
    yield from open_terminal(tmp_path, REPLIES)


@pytest.fixture
def plan_terminal(tmp_path):
    yield from open_terminal(tmp_path, PLAN_REPLIES)


@pytest.fixture
def subagent_terminal(tmp_path):
    yield from open_terminal(tmp_path, SUBAGENT_REPLIES)


def test_a_user_session_in_a_terminal_neovim(terminal):
    terminal.command("Pi write a file")
    # The write is asked as a side-by-side diff in a tab of its own: the file now (none) and
    # what pi would write, with the keys that answer.
    screen = terminal.wait_for("ga accept · gr reject · gs session · gA always · gR never · g? all")
    assert "Write made.txt: a new file · proposed →" in screen
    assert "by pi" in screen

    # The review is open and the editor still answers the user.
    assert terminal.evaluate("6 * 7") == "42"
    assert not (terminal.workspace / "made.txt").exists()

    terminal.type("ga")  # accept
    screen = terminal.wait_for("All written.")
    assert "ga accept" not in screen  # answering closed the review
    # The write went through the editor: the buffer holds it, unsaved, until the user saves.
    made = str(terminal.workspace / "made.txt")
    assert terminal.evaluate(f"substitute(join(getbufline(bufnr('{made}'), 1, '$'), '|'), ' ', '_', 'g')") == "by_pi"
    assert terminal.evaluate(f"getbufvar(bufnr('{made}'), '&modified')") == "1"
    assert (terminal.workspace / "made.txt").read_text() == ""
    terminal.command("wall")
    terminal.wait_until(f"getbufvar(bufnr('{made}'), '&modified')", "0")
    assert (terminal.workspace / "made.txt").read_text().rstrip("\n") == "by pi"
    # The text after the closed thinking fold is on screen, not hidden in the fold.
    assert "Now writing the file." in screen
    assert "lines: thinking" in screen  # the thinking fold is closed

    # The user goes to the top of the chat and opens the thinking fold; a new answer streams.
    terminal.command("lua vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('pi://chat'))[1])")
    terminal.keys("g", "g")
    thinking = terminal.evaluate("search('^thinking {{{', 'n')")
    terminal.command(f"{thinking}foldopen")
    terminal.command("Pi tell me more")
    terminal.wait_for("long line 3")
    terminal.wait_until("luaeval(\"require('pi').status().settled\")", "2")
    assert terminal.evaluate("line('.')") == "1"
    assert terminal.evaluate(f"foldclosed({thinking})") == "-1"
    screen = terminal.screen()
    assert "plan the file" in screen and "## you" in screen  # the view stayed at the top
    assert "long line 59" not in screen
    assert "π faux/script · " in screen and " tok · $0.0000" in screen  # the statusline component


def test_plan_mode_then_carry_it_out_then_rewind_in_a_terminal_neovim(plan_terminal):
    term = plan_terminal
    term.command("PiMode")  # no argument: the picker
    term.wait_for("plan — read-only")
    term.keys("1")
    term.wait_for("π faux/script · plan")
    term.command("Pi make notes")
    term.wait_for(":PiExecutePlan carries it out")
    assert not (term.workspace / "notes.txt").exists()  # refused: the plan is all there is
    term.command("PiExecutePlan!")  # auto-edit: the write runs without asking
    term.wait_for("Plan carried out.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "2")
    term.wait_for("auto-edit")
    assert (term.workspace / "notes.txt").exists()

    term.command("PiRewind")
    screen = term.wait_for("Rewind to before")
    assert "1. │ make notes" in screen and "2. │ Go ahead with the plan." in screen
    term.keys("2")
    term.wait_for("Rewind conversation and files: delete notes.txt")  # what will change, before confirming
    term.keys("1")
    term.wait_for("[rewound the conversation and 1 file(s)]")  # said in the chat
    term.wait_until("filereadable('notes.txt')", "0")
    assert "Plan carried out." not in term.screen()
    term.wait_for("Ask pi")  # the message is back in the input area, to edit and send again
    assert "Go ahead with the plan." in term.screen()

    # The user rewrites the message in the input area and sends it: the agent answers it.
    term.keys("Escape", "S")
    term.type("Write the notes only.")
    term.keys("Escape", "C-s")
    term.wait_for("Notes written.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "3")
    assert "## you" in term.screen() and "Write the notes only." in term.screen()

    # Rewind the conversation only: the notes the agent wrote stay.
    term.command("PiRewind")
    screen = term.wait_for("Rewind to before")
    assert "1. │ make notes" in screen and "2.   Go ahead with the plan." in screen  # a branch left
    assert "3. │ Write the notes only." in screen
    term.keys("3")
    screen = term.wait_for("Rewind conversation only (keep the files)")
    assert "Rewind to before “Write the notes only.”?" in screen
    term.keys("2")
    term.wait_for("[rewound the conversation; the files were kept]")
    assert "Notes written." not in term.screen()
    notes = str(term.workspace / "notes.txt")
    assert term.evaluate(f"substitute(join(getbufline(bufnr('{notes}'), 1, '$'), '|'), ' ', '_', 'g')") == \
        "only_the_notes"
    term.wait_for("Ask pi")
    term.keys("Escape")
    term.type("dd")  # the user lets the message go

    # :PiMode completes the mode's name as it is typed.
    term.keys("Escape")
    term.type(":PiMode as")
    term.keys("Tab")
    term.wait_for(":PiMode ask")
    term.keys("Enter")
    term.wait_for("π faux/script · ask")


def test_a_subagent_shown_under_its_task_call_in_a_terminal_neovim(subagent_terminal):
    term = subagent_terminal
    term.command("Pi delegate")
    # The child asks to write: its question names it, and meanwhile its progress is drawn under
    # the task call that started it.
    screen = term.wait_for("subagent “look around”: Write child.txt: a new file · proposed →")  # its review, in a new tab
    assert "from the child" in screen
    term.type("gT")  # back to the chat's tab, while the question waits
    screen = term.wait_for("│ → write child.txt …")
    assert "┌ subagent: look around · running" in screen
    assert "· 1 subagent" in screen  # the statusline
    term.type("gt")
    term.wait_for("ga accept · gr reject")
    term.type("ga")
    screen = term.wait_for("└ subagent: look around · completed")
    term.wait_for("Parent heard back.")
    assert "┌ subagent" not in term.screen()
    term.command("PiSubagents")  # the one finished subagent: opened at once, no one-item pickers
    screen = term.wait_for("# subagent: look around")  # its own view, from its session file
    term.capture("subagent-view")
    assert "child job" in screen and "The child is done." in screen
    assert "1. Open" not in screen


@pytest.fixture
def lifecycle_terminal(tmp_path):
    yield from open_terminal(tmp_path, [{"content": [{"type": "text", "text": "First answer."}]}])


def next_replies(tmp_path, replies, delay_ms=15):
    """The faux replies of the next daemon started (a restarted one reads its script anew)."""
    script = {"modelId": "script", "chunkSize": 3, "delayMs": delay_ms, "replies": replies}
    (tmp_path / "script.json").write_text(json.dumps(script))


def kill_daemon(term):
    """Kills the daemon: Neovim's child process running pi_daemon (its start command execs it)."""
    nvim = term.evaluate("getpid()")
    daemons = subprocess.run(["pgrep", "-P", nvim, "-f", "pi_daemon"], capture_output=True, text=True).stdout.split()
    assert len(daemons) == 1, daemons
    subprocess.run(["kill", "-9", daemons[0]], check=True)


def test_the_daemon_killed_idle_then_mid_answer_comes_back_with_the_conversation(lifecycle_terminal, tmp_path):
    term = lifecycle_terminal
    term.command("Pi hello there")
    term.wait_for("First answer.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    session = term.evaluate("luaeval(\"require('pi').status().session\")")

    # Killed while idle: said in the chat, restarted, the same conversation drawn again.
    next_replies(tmp_path, [{"content": [{"type": "text", "text": "\n".join(f"Long answer line {i}" for i in range(400))}]}])
    kill_daemon(term)
    screen = term.wait_for("— pi-daemon was killed (SIGKILL): restarted, this conversation loaded again —")
    assert "hello there" in screen and "First answer." in screen
    term.capture("killed-idle")

    # The conversation goes on, and the daemon is killed in the middle of the answer.
    term.command("Pi tell me more")
    term.wait_for("Long answer line 5")
    assert "working" in term.screen()  # the statusline
    next_replies(tmp_path, [{"content": [{"type": "text", "text": "Continued after the crash."}]}])
    kill_daemon(term)
    screen = term.wait_for("— the answer was cut off: :PiContinue answers again —")
    assert "Long answer line 5" in screen  # what was shown stays
    term.capture("killed-mid-answer")
    term.wait_for("[No Name] π faux/script · ask ·")  # the statusline
    assert "working" not in term.screen()
    assert term.evaluate("luaeval(\"require('pi').status().session\")") == session

    term.command("PiContinue")
    term.wait_for("Continued after the crash.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    # in the chat, in this order: the first answer, the cut-off one, the continued one
    positions = [term.evaluate(f"search('{t}', 'nw')") for t in
                 ("First answer.", "tell me more", "Long answer line 5", "Continued after the crash.")]
    assert 0 < int(positions[0]) < int(positions[1]) < int(positions[2]) < int(positions[3]), positions


@pytest.fixture
def no_model_terminal(tmp_path):
    yield from open_terminal(tmp_path, [], model=False)


def test_first_run_without_a_model_to_a_first_answer(no_model_terminal):
    term = no_model_terminal
    started = time.monotonic()
    term.command("Pi what can you do?")
    screen = term.wait_for("No model is chosen yet: how should pi answer?")
    assert "1. Enter an API key (anthropic, openai, openrouter, google)" in screen
    assert "2. Use a local model server (Ollama, llama.cpp, or a URL)" in screen
    term.capture("first-run-picker")
    term.keys("3")  # the offline demo
    screen = term.wait_for("You said: what can you do?")  # the typed prompt was kept and sent
    keep_figure("first-run-seconds", started)  # from the first :Pi to the answer, the picker answered at once
    term.capture("first-run-answer")
    assert "## you" in screen
    # the demo points at this client's picker, not at a command line option
    term.wait_for(":PiModel.)")
    term.wait_for("π faux/echo · ask")
    # the model chosen is the default: a new session answers without asking again
    term.command("PiNew")
    term.wait_gone("You said: what can you do?")
    term.command("Pi and in a new session?")
    term.wait_for("You said: and in a new session?")
    assert "how should pi answer?" not in term.screen()
    term.capture("first-run-new-session")


EDIT_REPLIES = [
    {"content": [{"type": "toolCall", "id": "e1", "name": "edit",
                  "arguments": {"path": "calc.py", "edits": [{"oldText": "a - b", "newText": "a + b"}]}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "toolCall", "id": "b1", "name": "bash",
                  "arguments": {"command": "python3 -m unittest -v test_calc 2>&1"}}], "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Fixed; the test passes."}]},
]


@pytest.fixture
def edit_terminal(tmp_path):
    yield from open_terminal(tmp_path, EDIT_REPLIES)


def test_the_agent_edits_then_its_test_run_sees_the_edit(edit_terminal):
    term = edit_terminal
    (term.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (term.workspace / "test_calc.py").write_text(
        "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
    term.command("edit calc.py")
    term.command("Pi fix add and run its test")
    term.wait_for("ga accept · gr reject")  # the edit, reviewed side by side
    term.type("ga")
    term.wait_for("Run `python3 -m unittest")
    term.keys("1")  # the test run
    screen = term.wait_for("Fixed; the test passes.")
    assert "saved calc.py before running" in screen  # under the bash call
    term.capture("edit-then-test-saved")
    calc = str(term.workspace / "calc.py")
    assert term.evaluate(f"getbufvar(bufnr('{calc}'), '&modified')") == "0"
    assert "return a + b" in (term.workspace / "calc.py").read_text()
    # the test run read the edit: its output says it passed
    assert term.evaluate("search('^test_add .* ok$', 'nw')") != "0"
    # undo still takes the agent's edit back
    term.command(f"buffer {calc}")
    term.keys("u")
    term.wait_until(f"getbufline(bufnr('{calc}'), 2)[0]", "return")
    assert term.evaluate(f"substitute(getbufline(bufnr('{calc}'), 2)[0], ' ', '_', 'g')") == "____return_a_-_b"


def readme_lua_block(after: str) -> str:
    """The first ```lua block of README.md after the line starting with `after`."""
    text = (PLUGIN.parents[1] / "README.md").read_text()
    start = text.index("\n" + after)
    block = text.index("```lua\n", start) + len("```lua\n")
    return text[block:text.index("```", block)]


def test_readme_quick_start_without_a_plugin_manager(tmp_path):
    """A stranger follows README's Neovim quick start: clone, the init.lua lines, :PiInstall,
    :Pi hello, the offline demo in Neovim's own vim.ui.select (an inputlist)."""
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed (Debian package tmux; scripts/test-all installs it)")
    home = tmp_path / "home"
    subprocess.run(["git", "clone", "-q", str(PLUGIN.parents[1]), str(home / "src" / "pi-daemon")], check=True)
    (home / ".config" / "nvim").mkdir(parents=True)
    (home / ".config" / "nvim" / "init.lua").write_text(readme_lua_block("Without a plugin manager"))
    workspace = tmp_path / "work"
    workspace.mkdir()
    # no pi-daemon on PATH; pip's cache of this machine, so the downloads are not made twice
    # the plugin attaches by default: its server's socket in a runtime folder of this test's own, stopped at the end
    runtime = tempfile.mkdtemp(prefix="pirt-")
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin", "TERM": "xterm-256color",
           "PIP_CACHE_DIR": str(Path("~/.cache/pip").expanduser()), "XDG_RUNTIME_DIR": runtime}
    name = f"pi-nvim-{uuid.uuid4().hex[:8]}"
    shell = " ".join(f"{k}={json.dumps(v)}" for k, v in env.items())
    new_session(["-s", name, "-x", "160", "-y", "48", "-c", str(workspace), f"env -i {shell} {NVIM} -i NONE"])
    term = Terminal(name)
    started = time.monotonic()
    try:
        term.wait_for("~")
        term.command("Pi hello")
        term.wait_for(":PiInstall installs it")  # no daemon yet: said, and the message kept
        term.command("PiInstall")  # pip's progress in the pi://install window
        # installed and started, the kept message was sent: there is no model yet
        screen = term.wait_for("No model is chosen yet: how should pi answer?", timeout=300)
        assert "3: Try the offline demo" in screen
        term.type("3")
        term.keys("Enter")
        term.wait_for("You said: hello")
        keep_figure("readme-quick-start-seconds", started)  # Neovim started, :PiInstall, the demo's answer
        term.capture("readme-quick-start-answer")
        assert term.evaluate("bufwinnr('pi://install')") == "-1"  # the install's split closed once it succeeded
        installed = str(home / ".local" / "share" / "nvim" / "pi-daemon" / "bin" / "pi-daemon")
        assert term.evaluate(f"getbufline(bufnr('pi://install'), '$')[0] ==# 'Installed: {installed}'") == "1"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)
        stop_servers(runtime)


INPUT_REPLIES = [
    {"content": [{"type": "toolCall", "id": "b1", "name": "bash",
                  "arguments": {"command": "for i in $(seq 1 25); do echo tick $i; sleep 0.2; done"}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Hurrying now."}]},
]


@pytest.fixture
def input_terminal(tmp_path):
    yield from open_terminal(tmp_path, INPUT_REPLIES)


def test_the_chat_input_area_and_its_queue_in_a_terminal_neovim(input_terminal):
    term = input_terminal
    term.command("PiChat")
    term.wait_for("Ask pi")  # the input area's winbar, under the chat
    screen = term.wait_for("<CR> send · g? keys")
    term.keys("C-w", "j")  # into the input area
    term.keys("i")
    term.type("line one")
    term.keys("Enter")
    term.type("line two")
    term.keys("Escape", "Enter")  # <CR> in normal mode sends
    term.wait_for("1. Allow once")  # the agent runs a command; its permission
    term.keys("1")
    screen = term.wait_gone("1. Allow once")
    assert "pi is working: steer or follow up" in screen
    assert "## you" in screen and "line one" in screen and "line two" in screen
    # While it works the user writes the next message in the same place; it is queued as a steer.
    term.keys("i")
    term.type("please hurry")
    term.keys("Escape", "Enter")
    term.wait_for("1. Steer: tell pi now, between its steps")  # what each choice does, not the wire's `followUp`
    assert "2. Follow up: send when pi is done" in term.screen()
    term.keys("1")
    screen = term.wait_for("queued steer: please hurry")  # above the input, while the chat follows its end
    term.capture("input-queue")
    assert "· 1 queued" in screen
    term.wait_for("Hurrying now.")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    assert "queued steer" not in term.screen()
    screen = term.wait_for(" Ask pi · ")  # the input area says it sends again, not steers
    rows = [row.split("│")[-1] for row in screen.splitlines()]
    under_bar = rows[next(i for i, row in enumerate(rows) if " Ask pi · " in row) + 1]
    assert not re.fullmatch(r"\s*-{5,}\s*", under_bar), rows  # no dashed filler row left by the queue
    # The prompts sent come back with <C-p>.
    term.keys("C-p")
    term.wait_until("getline(1)", "please")  # (an echo shows up to the first blank)
    term.keys("C-p")
    term.wait_until("getline(1)", "line")
    assert term.evaluate("line('$')") == "2"


REVIEW_REPLIES = [
    {"content": [{"type": "toolCall", "id": "e1", "name": "edit",
                  "arguments": {"path": "calc.py",
                                "edits": [{"oldText": "    return 1", "newText": "    return 2"}]}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Edited."}]},
    {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                  "arguments": {"path": "notes.txt", "content": "unwanted notes"}}], "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Not written then."}]},
]


@pytest.fixture
def review_terminal(tmp_path):
    yield from open_terminal(tmp_path, REVIEW_REPLIES)


def test_an_edit_and_a_write_reviewed_side_by_side_in_a_terminal_neovim(review_terminal):
    term = review_terminal
    (term.workspace / "calc.py").write_text("def f():\n    return 1\n")
    term.command("Pi make f return 2")
    screen = term.wait_for("ga accept · gr reject")
    assert "Edit calc.py: now · proposed →" in screen
    assert "return 1" in screen and "return 2" in screen  # the file now, beside what the edit makes of it
    assert term.evaluate("&diff") == "1"
    term.capture("review-edit")
    term.type("ga")
    screen = term.wait_for("Edited.")
    term.capture("review-edit-accepted")
    calc = str(term.workspace / "calc.py")
    assert term.evaluate(f"getbufline(bufnr('{calc}'), 2)[0] =~ 'return 2'") == "1"
    # The chat shows the edit as a diff, not as its JSON arguments.
    assert "→ edit calc.py" in screen and "-    return 1" in screen and "+    return 2" in screen
    assert "oldText" not in screen

    term.command("Pi now write notes")
    screen = term.wait_for("Write notes.txt: a new file · proposed →")
    assert "unwanted notes" in screen
    term.type("gr")  # reject
    term.wait_for("Not written then.")
    assert "ga accept" not in term.screen()
    assert not (term.workspace / "notes.txt").exists()
    assert term.evaluate(f"bufnr('{term.workspace / 'notes.txt'}')") == "-1"


STOP_REPLIES = [
    {"content": [{"type": "toolCall", "id": "s1", "name": "bash",
                  "arguments": {"command": "for i in $(seq 1 300); do echo out $i; sleep 0.1; done"}}],
     "stopReason": "toolUse"},
]


@pytest.fixture
def stop_terminal(tmp_path):
    yield from open_terminal(tmp_path, STOP_REPLIES)


def test_stop_keeps_a_long_commands_output_in_a_terminal_neovim(stop_terminal):
    term = stop_terminal
    term.command("Pi run the long one")
    term.wait_for("1. Allow once")
    term.keys("1")
    term.wait_for("lines: bash output")  # the output streams into a closed fold
    # The user opens the command's output in the chat and watches it.
    term.command("lua vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('pi://chat'))[1])")
    term.command("normal! zRG")
    term.wait_for("out 5")
    term.command("PiAbort")
    screen = term.wait_for("[stopped by the user]")
    term.capture("stop-keeps-output")
    rows = [row.split("│")[-1] for row in screen.splitlines()]
    stopped = next(i for i, row in enumerate(rows) if row.startswith("[stopped by the user]"))
    assert re.fullmatch(r"out \d+\s*", rows[stopped - 1]), rows  # the last line it printed, still there
    assert term.evaluate("search('^out 5$', 'nw') > 0") == "1"  # and all before it
    term.wait_for("— aborted —")
    assert "Tool execution was aborted" not in screen


# An input like snacks.nvim's: a floating window that shows what is typed (and ignores `secret`),
# holding the default text with the cursor at its end.
SHOWING_INPUT = r"""
vim.ui.input = function(opts, on_confirm)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { opts.default or "" })
  local win = vim.api.nvim_open_win(buf, true, { relative = "editor", row = 4, col = 4, width = 70, height = 1,
                                                 border = "single", title = opts.prompt, style = "minimal" })
  vim.keymap.set("i", "<CR>", function()
    local text = vim.api.nvim_get_current_line()
    vim.cmd.stopinsert()
    vim.api.nvim_win_close(win, true)
    on_confirm(text)
  end, { buffer = buf })
  vim.cmd.startinsert({ bang = true })
end
"""


def pick_line(screen: str, label: str) -> str:
    """The number of the picker's line whose label starts with `label`."""
    found = re.search(r"(\d+)\. " + re.escape(label), screen)
    assert found, f"{label!r} is not in the picker:\n{screen}"
    return found.group(1)


@pytest.fixture
def access_terminal(tmp_path):
    yield from open_terminal(tmp_path, [], model=False, extra=SHOWING_INPUT)


def test_model_access_keys_and_a_refusing_server_in_a_terminal_neovim(access_terminal, tmp_path):
    term = access_terminal
    term.command("PiKey")
    screen = term.wait_for("Model access")
    assert "3. openai · no key ($OPENAI_API_KEY): choose to enter one" in screen
    term.capture("pikey-list")
    term.keys(pick_line(screen, "openai ·"))  # its one action: enter the key
    term.wait_for("openai API key (OPENAI_API_KEY):")
    term.type("sk-never-on-screen")
    screen = term.wait_for("*" * len("sk-never-on-screen"))  # typed as stars, though vim.ui.input shows text
    assert "sk-never-on-screen" not in screen
    term.capture("pikey-secret")
    term.keys("Enter")
    term.wait_for("the openai key is set:")
    term.command("PiKey")
    screen = term.wait_for("openai · key entered here")
    term.keys(pick_line(screen, "openai ·"))
    screen = term.wait_for("Remove the openai key entered here")
    assert "Replace the openai key" in screen
    term.keys(pick_line(screen, "Remove"))
    screen = term.wait_for("openai · no key ($OPENAI_API_KEY)")  # the list again, the key gone
    term.keys("q")

    # a local server that refuses the credentials: added from :PiKey, then an answer fails
    server = subprocess.Popen([sys.executable, str(PLUGIN / "tests" / "model_server.py"), "--refuse"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = server.stdout.readline().strip()
        term.command("PiKey")
        screen = term.wait_for("Add a local model server")
        term.keys(pick_line(screen, "Add a local model server"))
        term.wait_for("No Ollama (11434) or llama.cpp (8080) server answered. Server URL")  # no one-item picker
        term.type(f"http://127.0.0.1:{port}/v1")
        term.keys("Enter")
        term.wait_for(f"π 127.0.0.1-{port}/tiny-local")
        term.command("Pi hello")
        screen = term.wait_for(f"127.0.0.1-{port} refused the credentials")
        assert "401" in screen
        term.capture("auth-refused-offer")
        term.keys(pick_line(screen, "Manage model access"))
        screen = term.wait_for(f"127.0.0.1-{port} · server http://127.0.0.1:{port}/v1 · 1 model(s) · refused:")
        term.capture("pikey-refused-server")
        term.keys(pick_line(screen, f"127.0.0.1-{port} ·"))
        term.wait_for(f"the model server 127.0.0.1-{port} is removed")
    finally:
        server.kill()


STOP_QUEUE_REPLIES = [
    {"content": [{"type": "toolCall", "id": "b1", "name": "bash",
                  "arguments": {"command": "for i in $(seq 1 600); do echo tick $i; sleep 0.1; done"}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "A queued message was answered."}]},
]


@pytest.fixture
def stop_queue_terminal(tmp_path):
    yield from open_terminal(tmp_path, STOP_QUEUE_REPLIES)


def test_stop_gives_the_queued_messages_back_in_a_terminal_neovim(stop_queue_terminal):
    term = stop_queue_terminal
    term.command("Pi count slowly")
    term.wait_for("1. Allow once")
    term.keys("1")
    term.wait_for("pi is working: steer or follow up")
    term.command("PiFollowUp then tell me the total")
    term.wait_for("queued follow-up: then tell me the total")
    term.command("PiAbort")
    term.wait_for("pi: stopped; 1 queued message(s) are back in the input area, not sent")
    term.wait_for("— aborted —")
    screen = term.wait_gone("queued follow-up:")
    assert "then tell me the total" in screen  # in the input area
    term.capture("stop-queue-given-back")
    assert term.evaluate("getbufline(bufnr('pi://input'), 1)[0]") == "then"  # (an echo shows up to the first blank)
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    assert "A queued message was answered." not in term.screen()


HUNK_REPLIES = [
    {"content": [{"type": "toolCall", "id": "e1", "name": "edit",
                  "arguments": {"path": "calc.py", "edits": [{"oldText": "    return a - b", "newText": "    return a + b"},
                                                             {"oldText": "    return a / b", "newText": "    return a * b"}]}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Done, as you chose."}]},
    {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                  "arguments": {"path": "unopened.txt", "content": "the agent's text\n"}}], "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "Written."}]},
]


@pytest.fixture
def hunk_terminal(tmp_path):
    yield from open_terminal(tmp_path, HUNK_REPLIES)


def test_a_hunk_rejected_in_the_review_then_an_unopened_file_written_from_pichanged(hunk_terminal):
    term = hunk_terminal
    (term.workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n" + "\n" * 2 + "# filler\n" * 8
                                            + "\n\ndef div(a, b):\n    return a / b\n")
    term.command("Pi fix both")
    screen = term.wait_for("(do rejects a hunk; edit it freely)")
    assert "calc.py (proposed)" in screen  # the tab is named by the file
    term.capture("review-hunks")
    term.command("2")  # the first hunk, in the proposed side where the cursor is
    term.type("do")  # taken back: as the file is now
    term.wait_until("getline(2) =~ 'a - b'", "1")
    term.capture("review-hunk-rejected")
    term.type("ga")
    term.wait_for("Done, as you chose.")
    calc = str(term.workspace / "calc.py")
    assert term.evaluate(f"getbufline(bufnr('{calc}'), 2)[0] =~ 'a - b'") == "1"
    assert term.evaluate(f"getbufline(bufnr('{calc}'), '$')[0] =~ 'a \\* b'") == "1"

    term.command("Pi write a file I have not opened")
    term.wait_for("ga accept")
    term.type("ga")
    term.wait_for("Written.")
    # neither file was open in a window: both wait in hidden buffers, unsaved, and the user is told
    term.wait_for("2 file(s) the agent changed are unsaved in buffers no window shows")
    term.command("PiChanged")
    screen = term.wait_for("1. Write them: calc.py, unopened.txt")
    assert "3. Open calc.py" in screen and "4. Open unopened.txt" in screen
    term.capture("pichanged")
    term.keys("1")
    term.wait_for("pi: wrote calc.py, unopened.txt")
    assert (term.workspace / "unopened.txt").read_text() == "the agent's text\n"
    assert "a * b" in (term.workspace / "calc.py").read_text() and "a - b" in (term.workspace / "calc.py").read_text()
    term.command("qa")  # nothing unsaved is left to refuse it
    deadline = time.monotonic() + 30
    while subprocess.run(["tmux", "has-session", "-t", term.name], capture_output=True).returncode == 0:
        assert time.monotonic() < deadline, term.screen()
        time.sleep(0.1)


UNCOVERED_REPLIES = [
    {"content": [{"type": "toolCall", "id": "d1", "name": "diagnostics", "arguments": {"paths": ["broken.py"]}}],
     "stopReason": "toolUse"},
    {"content": [{"type": "text", "text": "I cannot tell whether it has errors."}]},
]


@pytest.fixture
def uncovered_terminal(tmp_path):
    yield from open_terminal(tmp_path, UNCOVERED_REPLIES)


def test_a_file_no_language_server_covers_is_said_unknown_in_a_terminal_neovim(uncovered_terminal):
    term = uncovered_terminal
    (term.workspace / "broken.py").write_text("def f(:\n    return\n")
    term.command("Pi does broken.py have errors?")
    term.wait_for("I cannot tell whether it has errors.")
    term.command("lua vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('pi://chat'))[1])")
    term.command("normal! zR")  # the tool's output, unfolded
    screen = term.wait_for("no language server in the editor covers broken.py; its errors are unknown")
    assert "no errors or warnings" not in screen
    term.capture("language-uncovered")


UI_REPLIES = [
    {"content": [{"type": "text", "text": "\n".join(f"row {i}" for i in range(1, 81))}]},
    {"content": [{"type": "text", "text": "I see calc.py."}]},
]


@pytest.fixture
def ui_terminal(tmp_path):
    yield from open_terminal(tmp_path, UI_REPLIES)


def chat_rows(screen: str) -> list[str]:
    """The rows of the chat's column (the right of the vertical split)."""
    return [row.split("│", 1)[1] for row in screen.splitlines() if "│" in row]


def test_help_keys_state_markers_search_and_completion_in_a_terminal_neovim(ui_terminal):
    term = ui_terminal
    (term.workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    # :help pi is the plugin's manual, not 'preserveindent'
    term.command("help pi")
    screen = term.wait_for("The pi-daemon coding agent in Neovim")
    assert "pi.txt" in screen and "preserveindent" not in screen
    term.capture("help-pi")
    term.command("helpclose")

    # the chat's winbar says the state; g? lists the keys
    term.command("PiChat")
    term.wait_for("Ask pi · π pi-daemon is not running")  # (it starts with the first question)
    term.command("lua vim.api.nvim_set_current_win(vim.fn.win_findbuf(vim.fn.bufnr('pi://chat'))[1])")
    term.type("g?")
    screen = term.wait_for("pi.nvim keys")
    assert "<C-x><C-o>" in screen and "<C-p>" in screen
    term.capture("chat-keys")
    term.type("q")
    term.wait_gone("pi.nvim keys")

    # plan mode: the input area's winbar says so
    term.command("PiMode plan")
    screen = term.wait_for("Plan with pi (read-only) · π faux/script")  # the input area's winbar
    assert "Ask pi" not in screen
    term.capture("winbar-plan")
    term.command("PiMode ask")
    term.wait_for("Ask pi · π faux/script")

    # an answer longer than the window: its last line at the bottom, the end marker under it
    term.command("Pi count to eighty")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    screen = term.wait_for("row 80")
    rows = [r.rstrip() for r in chat_rows(screen)]
    end = rows.index("row 80")
    assert rows[end + 1] == "—", rows  # the marker, in view
    assert rows[end + 2].startswith("pi://chat"), rows  # the window's last row: no `~` rows under the end
    term.capture("answer-end-in-view")

    # @file completes in the input area (<C-x><C-o>) and goes along as context
    term.keys("C-w", "j")
    term.keys("i")
    term.type("look at @cal")
    term.keys("C-x", "C-o")
    term.wait_for("look at @calc.py")
    term.capture("input-completion")
    term.keys("Escape", "Enter")
    screen = term.wait_for("I see calc.py.")
    assert "context: calc.py" in screen, screen

    # the sessions picker searches what was said
    term.command("PiSessions")
    screen = term.wait_for("Search what was said in the sessions")
    number = next(line.split(".")[0].split()[-1] for line in screen.splitlines()
                  if "Search what was said in the sessions" in line)
    term.keys(number)
    term.wait_for("Search the sessions for:")
    term.type("eighty")
    term.keys("Enter")
    screen = term.wait_for("Sessions saying “eighty”")
    term.capture("session-search")
    term.keys("1")
    term.wait_gone("Sessions saying")
    chat_line = "getbufline(bufnr('pi://chat'), line('.', win_findbuf(bufnr('pi://chat'))[0]))[0]"
    term.wait_until(f"{chat_line} =~ 'eighty'", "1")  # the chat opened at the match


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_port(port: int, up: bool, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while listening(port) != up:
        if time.monotonic() > deadline:
            raise AssertionError(f"port {port} {'never listened' if up else 'still listens'} after {timeout} s")
        time.sleep(0.1)


@pytest.fixture
def process_terminal(tmp_path):
    port = free_port()
    replies = [
        {"content": [{"type": "text", "text": "Starting the server."},
                     {"type": "toolCall", "id": "b1", "name": "bash",
                      "arguments": {"command": f"python3 -m http.server {port} --bind 127.0.0.1", "background": True}}],
         "stopReason": "toolUse"},
        {"content": [{"type": "text", "text": f"It serves on port {port}."}]},
    ]
    for term in open_terminal(tmp_path, replies):
        term.port = port
        # the agent's commands may listen on loopback (the sandbox shares the network)
        (term.home / "settings.json").write_text(json.dumps({"sandbox": {"network": True}}))
        yield term


def test_a_background_server_listed_then_stopped_in_a_terminal_neovim(process_terminal):
    term, port = process_terminal, process_terminal.port
    term.command("Pi serve this folder")
    term.wait_for("1. Allow once")  # asked as any command
    term.keys("1")
    screen = term.wait_for(f"It serves on port {port}.")
    assert "→ bash, in the background" in screen
    id_ = re.search(r"⏵ running in the background as (\S+) \(:PiProcesses\)", term.wait_for("⏵ running")).group(1)
    wait_port(port, True, 15)
    term.wait_for("π faux/script · ask · ")
    term.wait_for(" · 1 process running")  # the statusline counts it
    term.capture("process-in-chat")

    term.command("PiProcesses")
    screen = term.wait_for("Background processes · 1 running")
    assert re.search(rf"{re.escape(id_)}\s+running\s+[\d:]+( s)?\s+python3 -m http.server {port}", screen), screen
    term.capture("process-list")

    # its output, followed while it runs: a request to the server shows up in it
    term.keys("Enter")
    term.wait_for(f"python3 -m http.server {port} --bind 127.0.0.1 · running")  # the output window's bar
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as answer:
        assert answer.status == 200
    term.wait_for('"GET / HTTP/1.1" 200')
    term.capture("process-output")
    term.keys("q")
    term.wait_gone(f"python3 -m http.server {port} --bind 127.0.0.1 · running")

    term.command("PiProcesses")  # back to the list
    term.wait_for("Background processes · 1 running")
    term.keys("x")
    screen = term.wait_for("Background processes · 0 running")
    assert re.search(rf"{re.escape(id_)}\s+stopped", screen), screen
    wait_port(port, False, 5)
    term.wait_for(f"background process {id_}: stopped after")  # said under the call in the chat
    term.wait_gone(" · 1 process running")
    term.capture("process-stopped")


COMPACT_REPLIES = [
    {"content": [{"type": "text", "text": "The module is slow because " + "it reads every file twice. " * 60}]},
    {"content": [{"type": "text", "text": "Caching the reads fixes it."}]},
    {"content": [{"type": "text", "text": "## Goal\nFind why the module is slow.\n## Progress\n"
                                          + "- found that every file is read twice\n" * 6}]},
]


@pytest.fixture
def compact_terminal(tmp_path):
    yield from open_terminal(tmp_path, COMPACT_REPLIES)


def test_compact_shows_why_then_the_sizes_or_why_not_in_a_terminal_neovim(compact_terminal):
    term = compact_terminal
    term.command("Pi why is the module slow?")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "1")
    term.command("Pi and how do I fix it?")
    term.wait_until("luaeval(\"require('pi').status().settled\")", "2")
    # while the summary is written: what is going on and why, with a spinner
    term.command("Pi /compact")
    screen = term.wait_for("── compacting: summarising the older conversation (you asked)")
    assert re.search(r"\(you asked\) [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]", screen), screen
    term.capture("compacting")
    # then the divider with the sizes, the summary a closed fold under it
    screen = term.wait_for("── conversation compacted: ~")
    rows = [r.rstrip() for r in chat_rows(screen)]
    divider = next(i for i, r in enumerate(rows) if r.startswith("── conversation compacted"))
    assert re.fullmatch(r"── conversation compacted: ~[\d.]+k? → [\d.]+k? tokens ──", rows[divider]), rows
    assert "lines: summary" in rows[divider + 1], rows
    assert "compacting: summarising" not in screen
    term.capture("compacted")
    # nothing older is left to summarise: said in the chat, and by /compact's reply
    term.command("Pi /compact")
    term.wait_for("⚠ not compacted: nothing to compact: the context is already small")
    term.wait_for("pi: /compact did not compact: nothing to compact")
    term.capture("not-compacted")
