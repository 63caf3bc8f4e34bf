"""The daemon's own files in a workspace's ``.pi/`` stay out of git; the project's ``.pi/`` configuration does not.

Through the real entry point: ``pi-daemon ask`` changes a file (its before-contents go to
``.pi/blobs/``), runs a command whose output spills to ``.pi/tmp/``, and ``/export`` writes
``.pi/exports/``; then a real ``git add -A`` stages the user's change and configuration only."""

import json
import subprocess
import sys

from client import clean_env, write_script
from helpers import git, git_repo


def test_git_add_all_after_a_run_stages_the_change_and_the_configuration_not_the_daemons_files(tmp_path):
    work = tmp_path / "project"
    (work / ".pi").mkdir(parents=True)
    (work / "notes.txt").write_text("before\n")
    git_repo(work)
    (work / ".pi" / "settings.json").write_text(json.dumps({"defaultThinkingLevel": "low"}))
    (work / ".pi" / "prompts").mkdir()
    (work / ".pi" / "prompts" / "review.md").write_text("Review {{args}}\n")
    script = write_script(tmp_path / "edit.json", [
        {"content": [{"type": "toolCall", "id": "c1", "name": "edit",
                      "arguments": {"path": "notes.txt", "edits": [{"oldText": "before", "newText": "after"}]}}],
         "stopReason": "toolUse"},
        {"content": [{"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": "seq 1 200000"}}],
         "stopReason": "toolUse"},
        {"content": [{"type": "text", "text": "done"}]}], modelId="edit")
    env = clean_env(home=str(tmp_path / "home"), PI_DAEMON_FAUX_SCRIPT=str(script))

    def ask(*args):
        out = subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/edit", "--yes", *args],
                             cwd=work, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return out

    ask("change the notes")
    assert (work / "notes.txt").read_text() == "after\n"
    session = json.loads(next((work / ".pi" / "sessions").glob("*.jsonl")).read_text().splitlines()[0])["id"]
    ask("--session", session, "/export markdown")
    for folder in ("sessions", "blobs", "tmp", "exports"):  # the daemon wrote in each of them
        assert [p for p in (work / ".pi" / folder).rglob("*") if p.is_file() and p.name != ".gitignore"], folder

    git(work, "add", "-A")
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=work, capture_output=True, text=True,
                            check=True).stdout.split()
    assert sorted(staged) == [".pi/prompts/review.md", ".pi/settings.json", "notes.txt"]
    untracked = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=work, capture_output=True,
                               text=True, check=True).stdout.splitlines()
    assert all(line.startswith(("M ", "A ")) for line in untracked), untracked


def test_a_gitignore_the_workspace_ships_in_the_daemons_folders_is_kept_and_not_written_through(tmp_path):
    work = tmp_path / "project"
    (work / ".pi" / "exports").mkdir(parents=True)
    (work / ".pi" / "sessions").mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("not the daemon's\n")
    (work / ".pi" / "exports" / ".gitignore").symlink_to(outside)
    (work / ".pi" / "sessions" / ".gitignore").write_text("# the project's own\n")
    out = subprocess.run([sys.executable, "-m", "pi_daemon", "ask", "--model", "faux/echo", "/export markdown"],
                         cwd=work, env=clean_env(home=str(tmp_path / "home")), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("Exported the session to "), out.stderr
    assert outside.read_text() == "not the daemon's\n"
    assert (work / ".pi" / "sessions" / ".gitignore").read_text() == "# the project's own\n"
