"""The programs the daemon runs itself (git, bwrap and its probe, rg, the shell of ``bash``)
against a ``PATH`` the repository has a folder in, through the real daemon.

An editor started from a shell with ``<workspace>/.venv/bin`` activated (or direnv's,
or ``node_modules/.bin``) passes that absolute folder on in ``PATH``. The repository ships
``bwrap``, ``git``, ``rg`` and ``bash`` there; each planted program records that it ran (and
whether it saw the API key) in a file outside the workspace, then runs the real one. None may
run, the real ones must (the sandbox is active, git reads the before-content back), and the
agent's command still sees the user's ``PATH`` as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from agent_shell import bash_call, home_with, script, tool_ends
from helpers import KEY, git_repo

NAMES = ("bwrap", "git", "rg", "bash")


def real(name: str) -> str:
    found = shutil.which(name, path=f"{os.environ['PATH']}:{Path(sys.executable).parent}")
    assert found, f"{name} is needed for this test"
    return found


def plant(folder: Path, log: Path, names: tuple[str, ...] = NAMES) -> None:
    """Programs in ``folder`` that append a line (their name, arguments and whether they saw the
    key) to ``log``, then run the real program of that name."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = folder / name
        path.write_text(f'#!/bin/sh\necho "{name} $* key=${{OPENAI_API_KEY:-none}}" >> {log}\n'
                        f'exec {real(name)} "$@"\n')
        path.chmod(0o755)


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    git_repo(ws)
    return ws


def grep_call(pattern: str) -> dict:
    return {"content": [{"type": "toolCall", "id": "g", "name": "grep", "arguments": {"pattern": pattern}}],
            "stopReason": "toolUse"}


def turn_changes(ws: Path) -> list[dict]:
    import json
    entries = [json.loads(line) for f in (ws / ".pi" / "sessions").glob("*.jsonl") for line in f.read_text().splitlines()]
    return [f for e in entries if e.get("type") == "turn_changes" for f in e["files"]]


@pytest.mark.parametrize("entry", ["inside", "symlink"])
def test_programs_in_a_path_folder_of_the_workspace_never_run(spawn, tmp_path, entry):
    """``inside``: ``<ws>/.venv/bin`` first in PATH; ``symlink``: a folder outside the workspace
    that is a symlink to ``<ws>/tools`` (it counts as inside)."""
    ws = workspace(tmp_path)
    ran = tmp_path / "ran.log"
    if entry == "inside":
        folder = ws / ".venv" / "bin"
        plant(folder, ran)
    else:
        plant(ws / "tools", ran)
        folder = tmp_path / "tools-link"
        folder.symlink_to(ws / "tools")
    d = spawn("--allow", "bash", "--faux-script",
              script(tmp_path, bash_call('echo two >> a.txt; echo "PATH=$PATH"'), grep_call("two")),
              "--model", "faux/s", cwd=str(ws),
              env={"home": home_with(tmp_path, {}), "OPENAI_API_KEY": KEY, "PATH": f"{folder}:{os.environ['PATH']}"})
    assert d.call("getState", {})["sandbox"]["active"] is True  # the probe ran: the real bwrap works here
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    bash, grep = tool_ends(d)
    assert not bash["isError"] and bash["result"]["details"]["sandboxed"] is True
    assert f"PATH={folder}:" in bash["result"]["content"][0]["text"]  # the command's PATH is the user's
    assert not grep["isError"] and "a.txt" in grep["result"]["content"][0]["text"]
    assert any(e["event"]["type"] == "turn_diff" for e in d.events)
    before = {Path(f["path"]).name: f["before"] for f in turn_changes(ws)}
    assert before["a.txt"].startswith("git:")  # git read the committed content: the real git ran
    assert not ran.exists(), ran.read_text()


def test_the_sandbox_probe_and_git_get_the_fixed_environment_without_keys(spawn, tmp_path):
    """Wrappers in a folder outside the workspace, first in PATH, record the environment the
    daemon gives ``bwrap`` (the probe, then the sandbox) and ``git``: never the API key; the probe
    and git get the same fixed one."""
    ws = workspace(tmp_path)
    log = tmp_path / "env.log"
    wrap = tmp_path / "wrap"
    wrap.mkdir()
    for name in ("bwrap", "git"):
        (wrap / name).write_text(f'#!/bin/sh\n{{ echo "== {name} $*"; env; }} >> {log}\nexec {real(name)} "$@"\n')
        (wrap / name).chmod(0o755)
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call("echo two >> a.txt")),
              "--model", "faux/s", cwd=str(ws),
              env={"home": home_with(tmp_path, {}), "OPENAI_API_KEY": KEY, "PATH": f"{wrap}:{os.environ['PATH']}"})
    assert d.call("getState", {})["sandbox"]["active"] is True
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    assert not tool_ends(d)[0]["isError"]
    records: list[tuple[str, dict[str, str]]] = []
    for block in log.read_text().split("== ")[1:]:
        head, *lines = block.splitlines()
        records.append((head, dict(line.split("=", 1) for line in lines if "=" in line)))
    probes = [env for head, env in records if head.startswith("bwrap --ro-bind / / --unshare-pid --unshare-net")]
    gits = [env for head, env in records if head.startswith("git ")]
    assert probes and gits and any(head.startswith("bwrap --die-with-parent") for head, _ in records)
    assert KEY not in log.read_text()
    fixed = {"PATH", "HOME", "XDG_CONFIG_HOME", "LC_ALL"}
    for env in probes:
        assert set(env) - {"PWD", "SHLVL", "_", "OLDPWD"} == fixed, env  # /bin/sh adds PWD and the like
        assert env["PATH"] == gits[0]["PATH"] and env["LC_ALL"] == "C"
    assert str(wrap) in gits[0]["PATH"].split(":")  # a folder outside the workspace is kept


def run_with_planted(spawn, tmp_path, settings: dict, folder: Path, names=NAMES) -> Path:
    """A sandboxed ``bash`` call by a daemon whose user ``settings`` make ``folder`` writable to
    commands, with programs planted in ``folder / "bin"``, first in ``PATH``; the planted
    programs' log (it must not exist)."""
    ws = workspace(tmp_path)
    ran = tmp_path / "ran.log"
    plant(folder / "bin", ran, names)
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call("echo two >> a.txt")),
              "--model", "faux/s", cwd=str(ws),
              env={"home": home_with(tmp_path, settings), "OPENAI_API_KEY": KEY,
                   "PATH": f"{folder / 'bin'}:{os.environ['PATH']}"})
    assert d.call("getState", {})["sandbox"]["active"] is True
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    assert not tool_ends(d)[0]["isError"]
    assert any(e["event"]["type"] == "turn_diff" for e in d.events)
    return ran


def test_a_path_folder_inside_an_extra_root_is_not_searched(spawn, tmp_path):
    """The user's settings give the workspace an extra root: commands may write there, so the
    ``bin`` folder in it is no place for the daemon's programs either."""
    extra = tmp_path / "extra"
    ran = run_with_planted(spawn, tmp_path, {"workspace": {"extraRoots": [str(extra)]}}, extra)
    assert not ran.exists(), ran.read_text()


def test_a_folder_the_sandbox_lets_commands_write_is_not_searched_from_the_start(spawn, tmp_path):
    """``sandbox.writable`` (the user's ``~/.local``, say) lets commands write a folder that is in
    ``PATH``: a command of an earlier daemon may have put a ``bwrap`` or ``git`` there. The daemon
    never runs them — not the probe at start, not git — before or after the sandbox is asked for."""
    local = tmp_path / "local"
    ran = run_with_planted(spawn, tmp_path, {"sandbox": {"writable": [str(local)]}}, local, ("bwrap", "git"))
    assert not ran.exists(), ran.read_text()
