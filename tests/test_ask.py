"""``pi-daemon ask``: the one-shot script client, with its exit codes."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from client import clean_env, text, write_script
from helpers import wait_until


def ask(*args, cwd, stdin=None):
    return subprocess.run([sys.executable, "-m", "pi_daemon", "ask", *args], cwd=cwd, env=clean_env(),
                          capture_output=True, text=True, input=stdin, timeout=60)


def test_answer_on_stdout_exit_zero(tmp_path):
    out = ask("--model", "faux/echo", "what", "is", "this?", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("You said: what is this?") and out.stdout.endswith("\n")


def test_prompt_from_stdin_and_json_events(tmp_path):
    out = ask("--model", "faux/echo", "--json", "-", cwd=tmp_path, stdin="piped question")
    events = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 0 and events[-1] == {"type": "agent_settled", "aborted": False}
    assert any(e["type"] == "message_end" and e["message"]["content"] == "piped question" for e in events)


def test_exit_codes_for_failures(tmp_path):
    out = ask("hello", cwd=tmp_path)
    assert out.returncode == 2 and "no model is selected" in out.stderr
    failing = write_script(tmp_path / "f.json", [{"content": [], "stopReason": "error", "errorMessage": "401 bad key"}],
                           modelId="f")
    out = ask("--model", "faux/f", "hello", cwd=tmp_path, stdin=None)
    out = subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/f", "hello"], cwd=tmp_path,
                         env=clean_env(PI_DAEMON_FAUX_SCRIPT=str(failing)), capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "401 bad key" in out.stderr
    script = write_script(tmp_path / "t.json", [text("first answer")], modelId="t")
    first = subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/t", "--json", "one"],
                           cwd=tmp_path, env=clean_env(PI_DAEMON_FAUX_SCRIPT=str(script)), capture_output=True,
                           text=True, timeout=60)
    assert first.returncode == 0
    out = ask("--model", "faux/echo", "--session", "no-such-session", "hi", cwd=tmp_path)
    assert out.returncode == 2 and "no session with id 'no-such-session'" in out.stderr


def test_writes_and_commands_are_refused_unless_allowed_on_the_command_line(tmp_path):
    script = write_script(tmp_path / "w.json", [
        {"content": [{"type": "toolCall", "id": "c1", "name": "write",
                      "arguments": {"path": "out.txt", "content": "x"}}], "stopReason": "toolUse"},
        {"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "touch ran"}}],
         "stopReason": "toolUse"},
        text("done")], modelId="w")

    def run(*flags):
        return subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/w", *flags, "go"],
                              cwd=tmp_path, env=clean_env(PI_DAEMON_FAUX_SCRIPT=str(script)), capture_output=True,
                              text=True, timeout=60)

    out = run()  # a script can tell: exit 3, and the last line of stderr names the refused tools
    assert out.returncode == 3 and "--allow write" in out.stderr and "--allow bash" in out.stderr
    assert out.stderr.splitlines()[-1] == ("pi-daemon ask: refused for want of permission: write, bash "
                                           "(let them run with --allow write,bash, or --yes)")
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "ran").exists()
    out = run("--allow", "write")
    assert (tmp_path / "out.txt").exists() and not (tmp_path / "ran").exists() and "--allow bash" in out.stderr
    assert out.returncode == 3 and out.stderr.splitlines()[-1].startswith(
        "pi-daemon ask: refused for want of permission: bash (")
    (tmp_path / "out.txt").unlink()
    out = run("--yes")
    assert out.returncode == 0 and (tmp_path / "out.txt").exists() and (tmp_path / "ran").exists()


# --- built-in commands, Ctrl-C, pipes, refusals (issue 41) ----------------------------------

def ask_env(tmp_path, script=None):
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir(exist_ok=True)
    return clean_env(home=str(home), **({"PI_DAEMON_FAUX_SCRIPT": str(script)} if script else {}))


def test_every_built_in_command_runs_prints_what_it_did_and_exits(tmp_path):
    env = ask_env(tmp_path)

    def command(*args):
        return subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/echo", *args], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=30)

    out = command("/export markdown")
    assert out.returncode == 0, out.stderr
    exported = Path(out.stdout.strip().removeprefix("Exported the session to ").removesuffix("."))
    assert exported.parent == tmp_path / ".pi" / "exports" and exported.suffix == ".md" and exported.is_file()
    assert command("/thinking high").stdout == "The thinking level is now high.\n"
    assert command("/mode plan").stdout == "The mode is now plan.\n"
    assert command("/model faux/echo").stdout == "The model is now faux/echo.\n"
    assert command("/new").stdout.startswith("Started a new session: ")
    out = command("/compact")  # a new session has nothing to compact: the daemon says so, exit 2
    assert out.returncode == 2 and "nothing to compact" in out.stderr and out.stdout == ""
    out = command("/thinking loud")
    assert out.returncode == 2 and "/thinking needs a level" in out.stderr
    out = command("--json", "/export html")
    line = json.loads(out.stdout)
    assert out.returncode == 0 and line["disposition"] == "command" and line["command"]["name"] == "export"
    assert Path(line["command"]["result"]["file"]).is_file()


def _session_id(workspace) -> str:
    files = list((Path(workspace) / ".pi" / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text().splitlines()[0])["id"]


def _ended_promptly(proc, what):
    try:
        code = proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"ask did not end within 10 s of Ctrl-C {what}")
    stderr = proc.stderr.read()
    assert code == 130 and "Traceback" not in stderr, (code, stderr)
    wait_until(lambda: not _group_alive(proc.pid), "the daemon ask started to exit as well")


def _group_alive(pgid) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_ctrl_c_ends_ask_promptly_while_it_streams_and_while_a_command_runs(tmp_path):
    """A terminal's Ctrl-C reaches the whole foreground group (ask and its daemon); ``kill -INT`` only ask."""
    quick = write_script(tmp_path.parent / f"{tmp_path.name}-quick.json", [text("ok")], modelId="slow")
    first = subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/slow", "hi"], cwd=tmp_path,
                           env=ask_env(tmp_path, quick), capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and first.stdout == "ok\n", first.stderr
    # the same model in the daemons below: each reply takes 150 chunks of 0.3 s (the /compact request's, or a run's)
    env = ask_env(tmp_path, write_script(tmp_path.parent / f"{tmp_path.name}-slow.json", [text("a long text " * 50)],
                                         modelId="slow", delayMs=300, chunkSize=4))
    session = _session_id(tmp_path)

    def start(*args):
        return subprocess.Popen([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/slow", *args],
                                cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)

    # /compact asks the model for a summary: the prompt request itself would take 45 s
    ask_ = start("--session", session, "/compact")
    wait_until(lambda: _daemon_holds(ask_.pid, f"{session}.jsonl"), "ask's daemon to load the session", timeout=30)
    os.kill(ask_.pid, signal.SIGINT)
    _ended_promptly(ask_, "during /compact")

    ask_ = start("--session", session, "go on")
    ask_.stdout.read(1)  # the answer streams
    os.killpg(ask_.pid, signal.SIGINT)
    _ended_promptly(ask_, "during a run")


def _daemon_holds(pid, name) -> bool:
    """Whether a child of ``pid`` has a file named ``name`` open."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except FileNotFoundError:
        return False
    for child in children:
        try:
            if any(os.readlink(fd).endswith(name) for fd in Path(f"/proc/{child}/fd").iterdir()):
                return True
        except (FileNotFoundError, ProcessLookupError):
            pass
    return False


def test_a_reader_that_leaves_early_ends_ask_quietly_as_a_filter(tmp_path):
    """``ask … | head -1``: no traceback, no error; ask dies of SIGPIPE as ``cat`` would (141 in a shell)."""
    lines = "\n".join(f"line {i}" for i in range(200))
    script = write_script(tmp_path.parent / f"{tmp_path.name}-lines.json", [text(lines), text(lines)],
                          modelId="lines", delayMs=20, chunkSize=8)
    env = ask_env(tmp_path, script)
    ask_ = f"{sys.executable} -m pi_daemon ask --model faux/lines"
    for pipeline, wanted in ((f"{ask_} 'count' | head -1", "line 0\n"),
                             (f"{ask_} --json 'count' | head -3 | wc -l", "3\n")):
        out = subprocess.run(["bash", "-c", pipeline + '; echo "ask: ${PIPESTATUS[0]}" >&2'], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == wanted.strip() and out.stderr == "ask: 141\n", (pipeline, out.stdout, out.stderr)
