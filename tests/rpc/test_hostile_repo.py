"""A cloned repository armed to run a program whenever git obeys it, through the real daemon.

Its ``.git/config`` names a trap program as clean/smudge/process filter, textconv, external
diff, fsmonitor, pager and hooks folder, pulls in more of the same with ``include.path``; its
hooks and its ``.gitattributes`` (and ``info/attributes``) select all of it. The test's own
``git add`` shows the trap fires (and would see the API key). The daemon's git runs, the
sandbox, the tools and ``changes/revert`` must never make it fire, or let a command arm it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agent_shell import bash_call, home_with, script, tool_ends
from helpers import HOOKS, KEY, armed_repo, git, git_repo

def test_the_repository_is_armed(tmp_path):
    """The control: plain git in this repository runs the trap, with the key in its environment."""
    ws, fired = armed_repo(tmp_path)
    (ws / "a.txt").write_text("two\n")
    subprocess.run(["git", "add", "-A"], cwd=ws, capture_output=True, env={**os.environ, "OPENAI_API_KEY": KEY})
    assert f"key={KEY}" in fired.read_text()


def run(spawn, ws: Path, tmp_path: Path, *replies: dict, args: tuple[str, ...] = (), settings: dict | None = None):
    home = home_with(tmp_path, settings or {})
    d = spawn(*args, "--faux-script", script(tmp_path, *replies), "--model", "faux/s",
              env={"home": home, "OPENAI_API_KEY": KEY}, cwd=str(ws))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    (tmp_path / "script.json").unlink()
    return d


def turn_diff_paths(d) -> set[str]:
    return {f["path"] for e in d.events if e["event"]["type"] == "turn_diff" for f in e["event"]["files"]}


def test_a_refused_command_runs_nothing_of_the_repository(spawn, tmp_path):
    """A: no permission for bash; the refused call takes no snapshot, so nothing of git runs."""
    ws, fired = armed_repo(tmp_path)
    d = run(spawn, ws, tmp_path, bash_call("echo changed >> a.txt"))
    end = tool_ends(d)[0]
    assert end["isError"] and "blocked" in end["result"]["content"][0]["text"]
    assert not fired.exists()
    assert (ws / "a.txt").read_text() == "one\n"


def test_the_snapshot_of_an_allowed_command_runs_nothing_and_still_sees_the_change(spawn, tmp_path):
    ws, fired = armed_repo(tmp_path)
    d = run(spawn, ws, tmp_path, bash_call("echo two >> a.txt && echo new > new.inc && echo p >> b.p"),
            args=("--allow", "bash"))
    assert not tool_ends(d)[0]["isError"]
    assert turn_diff_paths(d) == {"a.txt", "new.inc", "b.p"}
    got = {f["path"]: f for f in d.call("changes/get", {})["files"]}
    assert "+two" in got["a.txt"]["diff"]  # the before-content was read from git's blob, unfiltered
    assert not fired.exists()
    # the user's own repository is as it was: no object written into it, its index untouched
    status = subprocess.run(["git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "status",
                             "--porcelain"], cwd=ws, capture_output=True, text=True, env={
                                 "PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(tmp_path)})
    assert " M a.txt" in status.stdout.splitlines()


def test_a_sandboxed_command_cannot_arm_the_repository(spawn, tmp_path):
    """B: inside the sandbox .git/ and .gitattributes are read-only, so a command cannot plant a
    filter or hook for the user's next git (or the daemon's next snapshot)."""
    ws, fired = armed_repo(tmp_path)
    config = (ws / ".git" / "config").read_bytes()
    attributes = (ws / ".gitattributes").read_bytes()
    d = run(spawn, ws, tmp_path,
            bash_call("git config --file .git/config filter.x.clean /bin/true; echo '[core] fsmonitor=/x' >> .git/config;"
                      " cp /bin/true .git/hooks/pre-push; echo '* filter=x' >> .gitattributes;"
                      " mv .git .git-old; mv .gitattributes elsewhere; echo ok > a.txt", "b1"),
            bash_call("echo second > a.txt", "b2"), args=("--allow", "bash"))
    assert d.call("getState")["sandbox"]["active"] is True
    out = tool_ends(d)[0]["result"]["content"][0]["text"]
    assert "Read-only file system" in out or "Device or resource busy" in out
    assert (ws / ".git" / "config").read_bytes() == config
    assert not (ws / ".git" / "hooks" / "pre-push").exists()
    assert (ws / ".gitattributes").read_bytes() == attributes and not (ws / ".git-old").exists()
    assert (ws / "a.txt").read_text() == "second\n"  # the rest of the workspace stays writable
    assert not fired.exists()


def test_the_user_may_let_commands_change_git(spawn, tmp_path):
    """``sandbox.gitWritable`` (the user's own settings): git in the sandbox may then commit;
    the daemon's snapshot still runs nothing the repository names."""
    ws, fired = armed_repo(tmp_path)
    (ws / ".gitattributes").write_text("")
    git(ws, "config", "--unset", "core.hooksPath")
    git(ws, "config", "--unset", "core.fsmonitor")
    for hook in HOOKS:
        (ws / ".git" / "hooks" / hook).unlink()
    d = run(spawn, ws, tmp_path, bash_call(
        "git -c user.name=t -c user.email=t@t -c include.path=/dev/null config --file .git/config pi.test yes"),
        bash_call("echo x > a.txt", "b2"), args=("--allow", "bash"), settings={"sandbox": {"gitWritable": True}})
    assert [e["isError"] for e in tool_ends(d)] == [False, False]
    assert "test = yes" in (ws / ".git" / "config").read_text()
    assert not fired.exists()


def test_write_and_edit_inside_git_need_their_own_permission(spawn, tmp_path):
    """C: ``--allow write,edit`` does not cover .git/; neither does a symlink into it; and the
    refused bash after it runs nothing."""
    ws, fired = armed_repo(tmp_path)
    config = (ws / ".git" / "config").read_bytes()
    (ws / "g").symlink_to(".git")
    write = {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                          "arguments": {"path": ".git/config", "content": "[core]\n\tfsmonitor = /x\n"}},
                         {"type": "toolCall", "id": "w2", "name": "write",
                          "arguments": {"path": "g/hooks/pre-push", "content": "#!/bin/sh\n"}},
                         {"type": "toolCall", "id": "e1", "name": "edit",
                          "arguments": {"path": "sub/../.git/config", "edits": [
                              {"oldText": "[core]", "newText": "[core]\n\tfsmonitor = /x"}]}},
                         {"type": "toolCall", "id": "w3", "name": "write",
                          "arguments": {"path": "ok.txt", "content": "fine\n"}}], "stopReason": "toolUse"}
    d = run(spawn, ws, tmp_path, write, bash_call("git status"), args=("--allow", "write,edit"))
    ends = {e["toolCallId"]: e for e in tool_ends(d)}
    assert ".git/" in ends["w1"]["result"]["content"][0]["text"] and ends["w1"]["isError"]
    assert "symbolic link" in ends["w2"]["result"]["content"][0]["text"] and ends["w2"]["isError"]
    assert ends["e1"]["isError"] and not ends["w3"]["isError"]
    assert ends["b"]["isError"]
    assert (ws / ".git" / "config").read_bytes() == config and not (ws / ".git" / "hooks" / "pre-push").exists()
    assert (ws / "ok.txt").read_text() == "fine\n"
    assert not fired.exists()


def test_a_client_is_asked_for_a_write_inside_git_even_with_allow(spawn, tmp_path):
    ws, fired = armed_repo(tmp_path)
    home = home_with(tmp_path, {})
    d = spawn("--allow", "write", "--faux-script", script(tmp_path, {"content": [
        {"type": "toolCall", "id": "w1", "name": "write", "arguments": {"path": ".git/description", "content": "mine\n"}}],
        "stopReason": "toolUse"}), "--model", "faux/s", env={"home": home}, cwd=str(ws))
    d.on_request["permission/request"] = lambda params: {"outcome": "allow_once"}
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    asked = [r for r in d.server_requests if r["method"] == "permission/request"]
    assert len(asked) == 1 and asked[0]["params"]["toolName"] == "write"
    assert (ws / ".git" / "description").read_text() == "mine\n"
    assert not fired.exists()


def test_a_crafted_session_cannot_revert_git_config(spawn, tmp_path):
    """The revert chain: a session file whose recorded change names .git/config is a conflict."""
    ws, fired = armed_repo(tmp_path)
    real = (ws / ".git" / "config").read_text()
    (ws / "x").mkdir()
    (ws / "x" / "config").write_text(real + "[core]\n\tfsmonitor = /evil\n")
    d = run(spawn, ws, tmp_path, {"content": [{"type": "toolCall", "id": "w1", "name": "write",
                                                "arguments": {"path": "x/config", "content": real}}],
                                  "stopReason": "toolUse"}, args=("--allow", "write"))
    session_id = d.call("getState", {})["sessionId"]
    d.kill()
    session = next((ws / ".pi" / "sessions").glob(f"*{session_id}.jsonl"))
    session.write_text(session.read_text().replace("x/config", ".git/config"))
    again = spawn("--model", "faux/echo", env={"home": str(tmp_path / "home")}, cwd=str(ws))
    again.call("session/load", {"sessionId": session_id})
    run_id = again.call("changes/get", {})["runId"]
    result = again.call("changes/revert", {"runId": run_id})
    assert result["reverted"] == [] and ".git/" in result["conflicts"][0]["reason"]
    assert (ws / ".git" / "config").read_text() == real
    assert not fired.exists()


def test_programs_the_workspace_ships_are_not_run_by_the_daemon(spawn, tmp_path):
    """With ``.`` (or an empty entry) in PATH, a ``git`` or ``rg`` in the workspace is not the
    daemon's git or ripgrep: only PATH's absolute folders are searched."""
    ws, fired = armed_repo(tmp_path)
    for name in ("git", "rg"):
        (ws / name).write_text(f"#!/bin/sh\necho shipped-{name} >> {fired}\n")
        (ws / name).chmod(0o755)
    home = home_with(tmp_path, {})
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call("echo two >> a.txt"), {"content": [
        {"type": "toolCall", "id": "g", "name": "grep", "arguments": {"pattern": "one"}}], "stopReason": "toolUse"}),
        "--model", "faux/s", env={"home": home, "PATH": f".::{os.environ['PATH']}"}, cwd=str(ws))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    assert turn_diff_paths(d) >= {"a.txt"}
    assert not fired.exists()


def test_an_armed_nested_repository_runs_nothing(spawn, tmp_path):
    """A submodule (a nested repository the outer one records) with a trap as its fsmonitor and
    hooks: git asks a dirty submodule for its state by running git in it, with its config."""
    ws, fired = armed_repo(tmp_path)
    sub = ws / "sub"
    sub.mkdir()
    (sub / "s.txt").write_text("s\n")
    git_repo(sub)
    git(ws, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "add", "sub")
    git(sub, "config", "core.fsmonitor", str(tmp_path / "trap"))
    (sub / "s.txt").write_text("dirty\n")
    fired.unlink(missing_ok=True)
    d = run(spawn, ws, tmp_path, bash_call("echo two >> a.txt"), args=("--allow", "bash"))
    assert "a.txt" in turn_diff_paths(d)
    assert not fired.exists()
