"""``pi-daemon ask``: the one-shot script client, with its exit codes."""

import json
import subprocess
import sys

from client import clean_env, text, write_script


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

    out = run()
    assert out.returncode == 0 and "--allow write" in out.stderr and "--allow bash" in out.stderr
    assert not (tmp_path / "out.txt").exists() and not (tmp_path / "ran").exists()
    out = run("--allow", "write")
    assert (tmp_path / "out.txt").exists() and not (tmp_path / "ran").exists() and "--allow bash" in out.stderr
    (tmp_path / "out.txt").unlink()
    out = run("--yes")
    assert out.returncode == 0 and (tmp_path / "out.txt").exists() and (tmp_path / "ran").exists()
