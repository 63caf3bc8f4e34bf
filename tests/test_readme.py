"""README.md's first command works as written, in a fresh copy of the repository."""

import json
import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    return re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)


def test_readme_run_command_streams_an_answer(tmp_path):
    run_command = readme_commands()[0]
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
    assert readme_commands()[1] == "scripts/test-all"
    assert "scripts/test-all" in (ROOT / ".ci" / "run").read_text()


def test_readme_shell_examples_run(tmp_path):
    import os
    import sys
    examples = readme_commands()[2]
    assert "pi-daemon ask" in examples and "printf" in examples
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env["PI_DAEMON_HOME"] = str(tmp_path / "home")
    out = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", examples], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "You said: Summarise this repository" in out.stdout
    assert '"id":2,"result":{"aborted":false}' in out.stdout
    assert '"sessions":[' in out.stdout


def test_readme_python_client_example_runs(tmp_path):
    """The README's way to script the daemon from Python (pi_daemon.client) works as written."""
    import os
    import sys
    example = re.findall(r"```python\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)[0]
    assert "from pi_daemon.client import Client" in example
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PI_DAEMON_HOME"] = str(tmp_path / "home")
    out = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("You said: hello"), out.stdout
