"""What a command changed in a git work tree, through the real daemon: found at the command's
end, its committed before-contents kept as references to git's blobs and the rest in one pack,
and all of it still reviewable and revertible after a SIGKILL and ``session/load``."""

import json
import subprocess

import pytest

from helpers import git_repo
from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project

LINES = "".join(f"line {n}\n" for n in range(1, 101))
THREE_HUNKS = ("sed -i -e 's/^line 2$/line two/' -e 's/^line 15$/line fifteen/' -e 's/^line 28$/line twenty-eight/'"
               " f.txt")


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def turn_diffs(d) -> list[dict]:
    return [e["event"] for e in d.events if e["event"]["type"] == "turn_diff"]


def stored_changes(tmp_path) -> dict[str, dict]:
    session = next((tmp_path / ".pi" / "sessions").glob("*.jsonl"))
    return {f["path"].rsplit("/", 1)[1]: f for line in session.read_text().splitlines()
            for entry in [json.loads(line)] if entry.get("type") == "turn_changes" for f in entry["files"]}


def blob_id(tmp_path, name: str) -> str:
    return subprocess.run(["git", "rev-parse", f"HEAD:{name}"], cwd=tmp_path, capture_output=True, text=True,
                          check=True).stdout.strip()


def run_command(spawn, tmp_path, server, *replies):
    (tmp_path / "f.txt").write_text(LINES)
    (tmp_path / "dirty.txt").write_text("committed\n")
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    (tmp_path / "dirty.txt").write_text("changed before the run, not committed\n")
    server.script(calls(("b", "bash", {"command": f"{THREE_HUNKS} && echo by the command >> dirty.txt"
                                                  " && echo new > new.txt"})),
                  *replies, Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "rename three lines"})
    d.wait_event("agent_settled", timeout=30)
    return d


def restarted(spawn, tmp_path, d):
    session_id = d.call("getState", {})["sessionId"]
    d.proc.kill()  # SIGKILL
    d.proc.wait()
    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    return again


def test_a_commands_changes_survive_sigkill_and_revert_from_gits_blob(spawn, tmp_path, server):
    d = run_command(spawn, tmp_path, server)
    got = d.call("changes/get", {})
    files = {f["path"]: f for f in got["files"]}
    assert set(files) == {"f.txt", "dirty.txt", "new.txt"} and len(files["f.txt"]["hunks"]) == 3
    assert {f["path"]: f["diff"] for f in turn_diffs(d)[-1]["files"]} == {p: f["diff"] for p, f in files.items()}
    stored = stored_changes(tmp_path)
    # the committed before-content is git's blob, not a copy; the uncommitted one and the afters are one pack
    assert stored["f.txt"]["before"] == "git:" + blob_id(tmp_path, "f.txt")
    assert stored["f.txt"]["after"].endswith("+" + stored["f.txt"]["before"])  # three lines stored, not the file
    packs = list((tmp_path / ".pi" / "blobs" / "packs").iterdir())
    assert [p.name for p in packs] == [stored["dirty.txt"]["before"].split("@")[1].split(":")[0]]
    assert all(f["after"].split("@")[1].split(":")[0] == packs[0].name for f in stored.values())
    assert [p.name for p in (tmp_path / ".pi" / "blobs").iterdir()] == ["packs"]

    again = restarted(spawn, tmp_path, d)
    after = again.call("changes/get", {"withContent": True})
    assert after["runId"] == got["runId"]
    assert {f["path"]: f["diff"] for f in after["files"]} == {p: f["diff"] for p, f in files.items()}
    assert {f["path"]: f.get("before") for f in after["files"]} == {
        "f.txt": LINES, "dirty.txt": "changed before the run, not committed\n", "new.txt": None}
    middle = files["f.txt"]["hunks"][1]["id"]
    reply = again.call("changes/revert", {"runId": got["runId"], "files": [{"path": "f.txt", "hunkIds": [middle]},
                                                                           {"path": "dirty.txt"}]})
    assert reply["conflicts"] == [] and {"path": "f.txt", "hunkIds": [middle]} in reply["reverted"]
    assert (tmp_path / "f.txt").read_text() == LINES.replace("line 2\n", "line two\n").replace(
        "line 28\n", "line twenty-eight\n")
    assert (tmp_path / "dirty.txt").read_text() == "changed before the run, not committed\n"


def test_a_file_the_command_changed_and_a_tool_then_edited_keeps_gits_before_content(spawn, tmp_path, server):
    d = run_command(spawn, tmp_path, server,
                    calls(("e", "edit", {"path": "f.txt", "edits": [{"oldText": "line 22\n",
                                                                      "newText": "line 22 edited\n"}]})))
    diffs = turn_diffs(d)
    assert len(diffs) >= 2
    f = {x["path"]: x for x in diffs[-1]["files"]}["f.txt"]
    assert "+line 22 edited\n" in f["diff"] and "+line two\n" in f["diff"]
    assert stored_changes(tmp_path)["f.txt"]["before"] == "git:" + blob_id(tmp_path, "f.txt")
    again = restarted(spawn, tmp_path, d)
    run_id = again.call("changes/get", {})["runId"]
    reply = again.call("changes/revert", {"runId": run_id, "files": [{"path": "f.txt"}]})
    assert reply["conflicts"] == [] and (tmp_path / "f.txt").read_text() == LINES


def test_a_before_content_git_no_longer_holds_reads_as_not_kept(spawn, tmp_path, server):
    d = run_command(spawn, tmp_path, server)
    oid = blob_id(tmp_path, "f.txt")
    session_id = d.call("getState", {})["sessionId"]
    d.proc.kill()
    d.proc.wait()
    (tmp_path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()  # as after a rewritten history and a gc
    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    files = {f["path"]: f for f in again.call("changes/get", {})["files"]}
    assert "was not kept" in files["f.txt"]["diff"] and "+new\n" in files["new.txt"]["diff"]
    run_id = again.call("changes/get", {})["runId"]
    reply = again.call("changes/revert", {"runId": run_id, "files": [{"path": "f.txt"}]})
    assert reply["conflicts"] == [{"path": "f.txt", "reason": "its content before the run was not kept"}]
    assert "line two\n" in (tmp_path / "f.txt").read_text()
