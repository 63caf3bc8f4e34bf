"""README.md's snippets run as written, against the real daemon (offline faux models), and its list of
built-in commands is the daemon's own."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from pi_daemon.client import Client

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
# Node resolves the Node example's `vscode-jsonrpc` from the VS Code client's packages (scripts/test-all
# installs them before the Python suites).
NODE_MODULES = ROOT / "editor-clients" / "vscode" / "node_modules"


def snippets(lang: str | None = None) -> list[str]:
    return [code for found, code in re.findall(r"```(\w+)\n(.*?)\n```", README, re.S) if lang in (None, found)]


def script_env(tmp_path: Path) -> dict[str, str]:
    """A user's shell with the daemon on PATH, no model keys and a home of its own."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env["PI_DAEMON_HOME"] = str(tmp_path / "home")
    return env


def test_every_snippet_has_its_runner():
    """A snippet added to the README fails here until a test below (or the Neovim one) runs it."""
    languages = re.findall(r"```(\w+)\n", README)
    assert languages == ["sh", "sh", "lua", "sh", "python", "js"], languages
    # the Lua one is the Neovim quick start, followed by a user in a terminal
    terminal = (ROOT / "editor-clients" / "nvim" / "tests" / "test_terminal.py").read_text()
    assert 'readme_lua_block("Without a plugin manager")' in terminal
    assert "\nWithout a plugin manager" in README


def test_readme_run_command_streams_an_answer(tmp_path):
    run_command = snippets("sh")[0]
    assert "pi-daemon" in run_command and "pip install" in run_command
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (ROOT / name).is_file():
            target = tmp_path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target)
    out = subprocess.run(["bash", "-c", run_command], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    messages = [json.loads(line) for line in out.stdout.splitlines()]
    assert {"jsonrpc": "2.0", "id": 1, "result": {"disposition": "started"}} in messages
    events = [m["params"]["event"] for m in messages if "params" in m]
    deltas = "".join(e["assistantMessageEvent"].get("delta", "")
                     for e in events if e["type"] == "message_update"
                     and e["assistantMessageEvent"]["type"] == "text_delta")
    assert deltas.startswith("You said: hello")
    assert messages[-1]["params"]["event"]["type"] == "agent_settled"


def test_readme_test_command_is_what_ci_runs():
    assert snippets("sh")[1] == "scripts/test-all"
    assert "scripts/test-all" in (ROOT / ".ci" / "run").read_text()


def test_readme_shell_examples_run(tmp_path):
    examples = snippets("sh")[2]
    assert "pi-daemon ask" in examples and "printf" in examples
    out = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", examples], cwd=tmp_path, env=script_env(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "You said: Summarise this repository" in out.stdout
    assert '"id":2,"result":{"aborted":false}' in out.stdout
    assert '"sessions":[' in out.stdout


def test_readme_python_client_example_runs(tmp_path):
    """The README's way to script the daemon from Python (pi_daemon.client) works as written."""
    [example] = snippets("python")
    assert "from pi_daemon.client import Client" in example
    out = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=script_env(tmp_path),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("You said: hello"), out.stdout


def test_readme_node_example_runs_as_a_js_file(tmp_path):
    """Saved as the README says (`hello.js`, `node hello.js`), the Node example streams the answer and ends."""
    [example] = snippets("js")
    assert NODE_MODULES.joinpath("vscode-jsonrpc").is_dir(), \
        "vscode-jsonrpc is missing: run `npm ci` in editor-clients/vscode (scripts/test-all does)"
    (tmp_path / "hello.js").write_text(example)
    env = script_env(tmp_path) | {"NODE_PATH": str(NODE_MODULES)}
    out = subprocess.run(["node", "hello.js"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("You said: hello"), out.stdout


def readme_builtin_commands() -> list[tuple[str, str | None, str]]:
    """The rows of the README's table of built-in commands: (name, argument hint, what it does)."""
    section = README[README.index("\n## Built-in commands\n"):]
    section = section[:section.find("\n## ", 1)]
    rows = []
    for cell, meaning in re.findall(r"^\| `/([^`]+)` \| (.+) \|$", section, re.M):
        name, _, hint = cell.replace("\\|", "|").partition(" ")
        rows.append((name, hint or None, meaning))
    return rows


def test_readme_lists_every_builtin_command_the_daemon_has(tmp_path):
    with Client(cwd=str(tmp_path), env=script_env(tmp_path)) as pi:
        commands = pi.request("getCommands", timeout=60).commands
    daemon = [(c.name, c.argument_hint, c.description.lower()) for c in commands if c.source == "builtin"]
    readme = [(name, hint, meaning.lower()) for name, hint, meaning in readme_builtin_commands()]
    assert readme == daemon


def test_readme_links_name_files_of_the_repository():
    """The front door's links into the documentation (and its pictures) lead somewhere."""
    targets = re.findall(r"\]\(((?!https?:)[^)#]+)(?:#[^)]*)?\)", README)
    assert "docs/index.md" in targets and "docs/images/neovim-chat.png" in targets
    assert [t for t in targets if not (ROOT / t).is_file()] == []
