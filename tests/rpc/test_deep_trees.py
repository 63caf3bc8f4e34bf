"""A workspace folder chain far deeper than any real tree, through the real daemon: the bash call
succeeds, its change record stops at the depth bound and says which folder it left out."""

import os
import subprocess

import pytest

from helpers import git_repo
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results

DEEP = "d/" * 128  # the depth bound: the folder below it is left out


@pytest.fixture
def server(tmp_path):
    s = LoopbackServer()
    yield s
    s.close()
    subprocess.run(["rm", "-rf", str(tmp_path / "d")], check=True)  # pytest's own removal recurses: too deep


def chain(top, depth: int) -> None:
    """``d/d/…/d`` ``depth`` folders deep with a file at the bottom (its path is longer than a
    path may be: made a folder at a time)."""
    subprocess.run(["python3", "-c", f"import os\nfor _ in range({depth}): os.mkdir('d'); os.chdir('d')\n"
                    "open('bottom.txt', 'w').close()"], cwd=top, check=True)


def run(spawn, tmp_path, server, command: str):
    server.script(calls(("b", "bash", {"command": command})), Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=120)
    [result] = results(d)
    return result, [e["event"] for e in d.events if e["event"]["type"] == "turn_diff"]


def test_a_bash_call_in_a_tree_1200_folders_deep_outside_git_records_and_names_what_it_left_out(
        spawn, tmp_path, server):
    (tmp_path / "top.txt").write_text("a\n")
    chain(tmp_path, 1200)
    result, diffs = run(spawn, tmp_path, server, "echo b >> top.txt")
    assert not result["isError"], result
    diff = diffs[-1]
    text = result["result"]["content"][0]["text"]
    assert "[changes in these folders are not in the turn diff: d/d/" in text and "deeper than 128 folders" in text
    assert [(f["path"], f["diff"].splitlines()[-1]) for f in diff["files"]] == [("top.txt", "+b")]
    assert [(s["path"], s["reason"].split(":")[0]) for s in diff["skipped"]] == \
        [(DEEP + "d", "deeper than 128 folders below the workspace")]


def test_a_chain_1500_folders_deep_made_by_a_command_in_git_is_recorded_to_the_bound_and_named(
        spawn, tmp_path, server):
    (tmp_path / "top.txt").write_text("a\n")
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    make = ("python3 -c \"import os\nfor n in range(1500):\n if n == 20: open('near.txt', 'w').write('n')\n"
            " os.mkdir('d'); os.chdir('d')\nopen('bottom.txt', 'w').write('b')\" && echo b >> top.txt")
    result, diffs = run(spawn, tmp_path, server, make)
    assert not result["isError"], result
    diff = diffs[-1]
    assert sorted(f["path"] for f in diff["files"]) == ["d/" * 20 + "near.txt", "top.txt"]
    assert [(s["path"], s["reason"].split(":")[0]) for s in diff["skipped"]] == \
        [(DEEP + "d", "deeper than 128 folders below the workspace")]
    tracked = subprocess.run(["git", "status", "--porcelain"], cwd=tmp_path, capture_output=True, text=True)
    assert tracked.returncode == 0  # the user's own git still reads the tree
