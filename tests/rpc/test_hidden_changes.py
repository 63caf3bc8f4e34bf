"""Changes a command makes that the turn diff cannot simply read, through the real daemon: a
tracked file changed through a hard link in an ignored folder, and a file too large to diff.
Each is listed with what it is, never left out."""

import pytest

from helpers import git_repo
from loopback import LoopbackServer, Reply, openai_text
from test_bash_changes import turn_diffs
from test_tools_e2e import calls, project

LINES = "".join(f"line {n}\n" for n in range(1, 21))


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def ran(spawn, tmp_path, server, *commands: str, env=None):
    server.script(*(r for command in commands for r in (calls(("b", "bash", {"command": command})),
                                                        Reply(body=openai_text("ok")))))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server), env=env)
    for n, _ in enumerate(commands, 1):
        d.call("prompt", {"text": "run it"})
        d.wait_event("agent_settled", count=n, timeout=60)
    return d


@pytest.mark.parametrize("build", ["there before", "made by the command"])
def test_a_tracked_file_changed_through_a_hard_link_in_an_ignored_folder_is_reviewed_and_reverted(
        spawn, tmp_path, server, build):
    (tmp_path / "f.txt").write_text(LINES)
    (tmp_path / ".gitignore").write_text("/.pi/\nbuild/\n")
    if build == "there before":
        (tmp_path / "build").mkdir()
        (tmp_path / "build" / "out.o").write_text("old build\n")
    git_repo(tmp_path)
    d = ran(spawn, tmp_path, server, "true",
            "mkdir -p build && ln f.txt build/f.txt && echo changed through the link >> build/f.txt")
    files = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert list(files) == ["f.txt"]
    assert "+changed through the link\n" in files["f.txt"]["diff"] and "reason" not in files["f.txt"]
    got = d.call("changes/get", {})
    reply = d.call("changes/revert", {"runId": got["runId"]})
    assert reply["conflicts"] == [] and reply["reverted"][0]["path"] == "f.txt"
    assert (tmp_path / "f.txt").read_text() == LINES == (tmp_path / "build" / "f.txt").read_text()


def test_a_huge_untracked_file_is_listed_by_size_as_too_large_and_never_read(spawn, tmp_path, server):
    (tmp_path / "f.txt").write_text(LINES)
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    with open(tmp_path / "big.bin", "wb") as f:
        f.truncate(12 << 30)  # sparse: hashing it is what costs
    d = ran(spawn, tmp_path, server, "true", "echo more >> big.bin && echo x >> f.txt")
    files = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert set(files) == {"big.bin", "f.txt"} and "+x\n" in files["f.txt"]["diff"]
    big = files["big.bin"]
    assert big["reason"].startswith("too large to diff (12 GiB") and big["size"] == (12 << 30) + 5
    assert big["status"] == "modified" and big["hunks"] == [] and "not restorable" in big["diff"]
    run_id = d.call("changes/get", {})["runId"]
    reply = d.call("changes/revert", {"runId": run_id, "files": [{"path": "big.bin"}]})
    assert reply["conflicts"] == [{"path": "big.bin", "reason": "not restorable: " + big["reason"]}]
    assert {e["reason"] for e in d.call("changes/get", {})["files"] if e["path"] == "big.bin"} == {big["reason"]}


def test_without_the_sandbox_a_write_through_a_hard_link_outside_the_workspace_is_found(spawn, tmp_path, server):
    """Every folder of the tree is watched, but a command outside the sandbox can write anywhere:
    a link made outside the workspace still does not hide the change."""
    (tmp_path / "f.txt").write_text(LINES)
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir()
    (home / "settings.json").write_text('{"sandbox": {"enabled": false}}')
    d = ran(spawn, tmp_path, server, "true", f"ln f.txt {outside}/f.txt && echo changed from outside >> {outside}/f.txt",
            env={"PI_DAEMON_HOME": str(home)})
    assert d.call("getState")["sandbox"]["active"] is False
    files = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert list(files) == ["f.txt"] and "2 hard links" in files["f.txt"]["reason"]  # one name is outside:
    assert "not restorable" in files["f.txt"]["diff"]  # listed, not read


def test_a_change_found_through_a_hard_link_is_the_next_runs_before_content(spawn, tmp_path, server):
    """The next run's diff of the file starts from what the hidden write left, not from before it."""
    (tmp_path / "f.txt").write_text(LINES)
    (tmp_path / ".gitignore").write_text("/.pi/\nbuild/\n")
    (tmp_path / "build").mkdir()
    git_repo(tmp_path)
    d = ran(spawn, tmp_path, server, "true", "ln f.txt build/f.txt && echo hidden >> build/f.txt",
            "echo seen >> f.txt")
    last = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert "+seen\n" in last["f.txt"]["diff"] and "+hidden" not in last["f.txt"]["diff"]
