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
    assert sorted(p.name for p in (tmp_path / ".pi" / "blobs").iterdir()) == [".gitignore", "packs"]

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


def killed(d) -> str:
    session_id = d.call("getState", {})["sessionId"]
    d.proc.kill()  # SIGKILL
    d.proc.wait()
    return session_id


def test_a_pack_gone_or_a_damaged_session_file_is_reported_and_the_daemon_keeps_serving(spawn, tmp_path, server):
    import os
    d = run_command(spawn, tmp_path, server)
    run_id = d.call("changes/get", {})["runId"]
    session_id = killed(d)
    for pack in (tmp_path / ".pi" / "blobs" / "packs").iterdir():
        pack.unlink()  # the after-contents (and dirty.txt's before) are gone; f.txt's before is git's
    os.mkfifo(tmp_path / "fifo")
    session = next((tmp_path / ".pi" / "sessions").glob("*.jsonl"))
    digest = "0" * 64
    damaged = [{"files": 5}, {"files": [5, {"path": 5}, {"before": "x"}, {"path": "relative.txt", "after": None}]},
               {"files": [{"path": str(tmp_path / "g.txt"), "before": [1], "after": {"a": 1}}]},
               {"files": [{"path": str(tmp_path / "h.txt"), "before": str(tmp_path / "fifo"),
                           "after": f"{digest}@{'a' * 16}:{10 ** 30}:{10 ** 17}+../../fifo"}]}]
    with session.open("a") as f:
        for n, entry in enumerate(damaged):
            f.write(json.dumps({"type": "turn_changes", "runId": f"bad{n}", **entry}) + "\n")
        f.write(json.dumps({"type": "turn_review", "runId": run_id, "path": 5, "hunkIds": 7}) + "\n")
    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    got = again.call("changes/get", {"runId": run_id})
    files = {f["path"]: f for f in got["files"]}
    assert "(its content after the run was not kept)" in files["f.txt"]["diff"] and not files["f.txt"]["hunks"]
    assert "before the run was not kept" in files["dirty.txt"]["diff"]
    assert got["runs"] == [run_id, "bad0", "bad1", "bad2", "bad3"]
    assert again.call("changes/get", {"runId": "bad1"})["files"] == []
    assert [f["path"] for f in again.call("changes/get", {"runId": "bad3"})["files"]] == ["h.txt"]
    reply = again.call("changes/revert", {"runId": run_id, "files": [{"path": "f.txt"}]})
    assert reply["conflicts"] == [{"path": "f.txt", "reason": "its content after the run was not kept"}]
    assert "line two\n" in (tmp_path / "f.txt").read_text()  # left as it is
    assert again.call("changes/accept", {"runId": "bad2"}) == {"runId": "bad2", "accepted": 0}


def test_a_binary_file_deleted_after_the_run_is_not_recreated_by_a_revert(spawn, tmp_path, server):
    (tmp_path / "old.bin").write_bytes(b"\0old")
    (tmp_path / ".gitignore").write_text("/.pi/\n")
    git_repo(tmp_path)
    server.script(calls(("b", "bash", {"command": "printf '\\0new' > old.bin && printf '\\0add' > added.bin"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "change the binaries"})
    d.wait_event("agent_settled", timeout=30)
    got = d.call("changes/get", {})
    assert {f["path"] for f in got["files"]} == {"old.bin", "added.bin"}
    (tmp_path / "old.bin").unlink()  # the user deleted both since
    (tmp_path / "added.bin").unlink()
    reply = d.call("changes/revert", {"runId": got["runId"]})
    assert sorted(reply["conflicts"], key=lambda c: c["path"]) == [
        {"path": "added.bin", "reason": "the file no longer exists"},
        {"path": "old.bin", "reason": "the file no longer exists"}]
    assert not (tmp_path / "old.bin").exists() and not (tmp_path / "added.bin").exists()


def test_a_pack_a_killed_daemon_left_half_written_is_removed_by_the_next_scan(spawn, tmp_path, server):
    import os
    import time
    packs = tmp_path / ".pi" / "blobs" / "packs"
    packs.mkdir(parents=True)
    (packs / ".0123456789abcdef.tmp").write_bytes(b"cut short by a SIGKILL")
    hour_ago = time.time() - 3600
    os.utime(packs / ".0123456789abcdef.tmp", (hour_ago, hour_ago))
    d = run_command(spawn, tmp_path, server)
    assert len(d.call("changes/get", {})["files"]) == 3
    assert [p.name for p in packs.iterdir()] == [stored_changes(tmp_path)["new.txt"]["after"].split("@")[1][:16]]


def _blob(tmp_path, data: bytes) -> str:
    import hashlib
    digest = hashlib.sha256(data).hexdigest()
    (tmp_path / ".pi" / "blobs" / digest[:2]).mkdir(parents=True, exist_ok=True)
    (tmp_path / ".pi" / "blobs" / digest[:2] / digest).write_bytes(data)
    return digest


def _stored_run(spawn, tmp_path, server, files: list[dict]) -> tuple[object, str]:
    """A session with one run that changed ``files`` (as its file says), loaded in a new daemon."""
    server.script(Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "hi"})
    d.wait_event("agent_settled", timeout=30)
    session_id = killed(d)
    session = next((tmp_path / ".pi" / "sessions").glob("*.jsonl"))
    with session.open("a") as f:
        f.write(json.dumps({"type": "turn_changes", "runId": "r", "files": files}) + "\n")
    again = spawn("--model", "local/coder", cwd=str(tmp_path))
    again.call("session/load", {"sessionId": session_id})
    return again, session_id


def test_a_stored_path_out_of_the_workspace_or_in_pi_is_a_conflict_the_others_are_reverted(spawn, tmp_path, server):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    (workspace / "a.txt").write_text("after\n")
    models = workspace / ".pi" / "models.json"
    project(workspace, server)
    models.write_text('{"providers": {}}\n')
    files = [{"path": str(outside), "before": _blob(workspace, b"planted\n"), "after": _blob(workspace, b"mine\n")},
             {"path": str(models), "before": _blob(workspace, b"{}\n"), "after": _blob(workspace, models.read_bytes())},
             {"path": str(workspace / "a.txt"), "before": _blob(workspace, b"before\n"),
              "after": _blob(workspace, b"after\n")}]
    d, _ = _stored_run(spawn, workspace, server, files)
    reply = d.call("changes/revert", {"runId": "r"})
    assert [f["path"] for f in reply["reverted"]] == ["a.txt"]
    assert [(c["path"], "outside the workspace" in c["reason"] or ".pi/" in c["reason"]) for c in reply["conflicts"]
            ] == [(str(outside), True), (".pi/models.json", True)]
    assert outside.read_text() == "mine\n" and b"providers" in models.read_bytes()
    assert (workspace / "a.txt").read_text() == "before\n"
    assert "a.txt" not in [f["path"] for f in d.call("changes/get", {"runId": "r"})["files"]]  # recorded


def test_what_a_revert_wrote_before_a_later_file_failed_is_recorded(spawn, tmp_path, server):
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text(f"{name} after\n")
    project(tmp_path, server)
    files = [{"path": str(tmp_path / name), "before": _blob(tmp_path, f"{name} before\n".encode()),
              "after": _blob(tmp_path, f"{name} after\n".encode())} for name in ("a.txt", "b.txt")]
    d, _ = _stored_run(spawn, tmp_path, server, files)
    answers = iter([{"applied": True}, {"applied": False, "failureReason": "the user said no"}])

    def apply(params):
        answer = next(answers)
        if answer["applied"]:
            (tmp_path / "a.txt").write_text("a.txt before\n")
        return answer

    d.on_request["workspace/applyEdit"] = apply
    d.call("initialize", {"capabilities": {"fs": {"readTextFile": False, "applyEdit": True}}})
    error = d.request("changes/revert", {"runId": "r"})["error"]
    assert error["code"] == -32003 and "the user said no" in error["message"]
    assert [f["path"] for f in d.call("changes/get", {"runId": "r"})["files"]] == ["b.txt"]  # a.txt's revert is kept


def test_a_symlinked_packs_folder_is_not_written_through_and_blobs_that_cannot_be_written_do_not_stop_the_run(
        spawn, tmp_path, server):
    elsewhere = tmp_path.parent / (tmp_path.name + "-elsewhere")
    elsewhere.mkdir()
    blobs = tmp_path / ".pi" / "blobs"
    blobs.mkdir(parents=True)
    (blobs / "packs").symlink_to(elsewhere)  # as a cloned repository may hold it
    for n in range(256):
        (blobs / f"{n:02x}").symlink_to(elsewhere)  # and every blob folder too
    d = run_command(spawn, tmp_path, server)
    assert list(elsewhere.iterdir()) == []
    ended = [e["event"] for e in d.events if e["event"]["type"] == "agent_settled"]
    assert ended == [{"type": "agent_settled", "aborted": False}]
    assert [m["role"] for m in d.call("getMessages", {})["messages"]][-1] == "assistant"
    live = {f["path"]: f for f in turn_diffs(d)[-1]["files"]}
    assert "+line two\n" in live["f.txt"]["diff"]  # told as it happened
    stored = stored_changes(tmp_path)
    assert stored["f.txt"]["before"].startswith("git:") and stored["f.txt"]["after"] == "?"
    assert stored["new.txt"] == {"path": str(tmp_path / "new.txt"), "before": None, "after": "?"}
    files = {f["path"]: f for f in d.call("changes/get", {})["files"]}
    assert "(its content after the run was not kept)" in files["f.txt"]["diff"]
    assert d.wait_stderr(b"could not be stored")


def test_runs_after_the_first_see_the_users_edits_between_them_and_the_folders_a_command_moves(spawn, tmp_path,
                                                                                               server):
    """The worktree is read at the daemon's first command, then followed by the kernel's file
    events: a later run's before-contents are what the user left between the runs, and a
    command that moves and makes folders has every file it moved or made in its turn diff."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("a = 1\n")
    (tmp_path / "notes.txt").write_text("one\n")
    (tmp_path / ".gitignore").write_text("/.pi/\nbuild/\n")
    git_repo(tmp_path)
    server.script(calls(("b1", "bash", {"command": "echo two >> notes.txt"})), Reply(body=openai_text("ok")),
                  calls(("b2", "bash", {"command": "echo three >> notes.txt && mv src lib && mkdir -p new/deep"
                                                   " build && echo x > new/deep/x.py && echo o > build/out.o"})),
                  Reply(body=openai_text("ok")))
    d = spawn("--model", "local/coder", "--yes", cwd=project(tmp_path, server))
    d.call("prompt", {"text": "first"})
    d.wait_event("agent_settled", timeout=30)
    (tmp_path / "notes.txt").write_text("the user's own edit\n")  # between the runs, in the editor
    d.call("prompt", {"text": "second"})
    d.wait_event("agent_settled", count=2, timeout=30)
    last = turn_diffs(d)[-1]["files"]
    assert {f["path"]: f["diff"].count("\n+") - f["diff"].count("\n+++") for f in last} == {
        "notes.txt": 1, "lib/a.py": 1, "new/deep/x.py": 1, "src/a.py": 0}
    notes = next(f for f in last if f["path"] == "notes.txt")
    assert "-the user's own edit\n+the user's own edit\n+three" not in notes["diff"]
    assert " the user's own edit\n+three" in notes["diff"]  # the user's edit is the before, not the command's
