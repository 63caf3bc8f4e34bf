"""Session files on a full disk and in a read-only workspace, through the daemon.

Both use real file systems: a small tmpfs filled to the last byte, and a read-only bind
mount (the tests run as root, which ignores permission bits).
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from client import text, write_script


@pytest.fixture
def mounts():
    done = []

    def mount(target: Path, *args: str) -> Path:
        target.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", *args, str(target)], check=True)
        done.append(target)
        return target

    yield mount
    for target in reversed(done):
        subprocess.run(["umount", "-l", str(target)], check=False)


def small_disk(mounts, tmp_path) -> Path:
    return mounts(tmp_path / "ws", "-t", "tmpfs", "-o", "size=256k", "tmpfs")


def fill(folder: Path, leave: int = 0) -> Path:
    """Fill the file system to the last byte, then free ``leave`` bytes again."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for chunk in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError:
                pass
        if leave:
            os.ftruncate(fd, os.fstat(fd).st_size - leave)
    finally:
        os.close(fd)
    return filler


def lines_of(file) -> list[dict]:
    data = Path(file).read_bytes()
    assert data.endswith(b"\n"), data[-200:]
    return [json.loads(line) for line in data.splitlines()]  # every line a complete entry


def texts(messages) -> list:
    """``(role, first line of the text)`` of each message."""
    out = []
    for m in messages:
        content = m["content"]
        whole = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
        out.append((m["role"], whole.split("\n")[0]))
    return out


def test_a_prompt_that_cannot_be_stored_is_refused_and_the_file_stays_whole(spawn, mounts, tmp_path):
    ws = small_disk(mounts, tmp_path)
    d = spawn("--model", "faux/echo", cwd=str(ws))
    created = d.call("session/new")
    d.call("prompt", {"text": "first"})
    d.wait_event("agent_settled")
    filler = fill(ws)

    refused = d.request("prompt", {"text": "lost " + "x" * 10_000})["error"]
    assert refused["code"] == -32008 and "not sent to the model" in refused["message"]
    assert "No space left on device" in refused["message"] and refused["data"]["errno"] == "ENOSPC"
    failed = d.wait_event("session_write_failed")["event"]
    assert failed["errno"] == "ENOSPC" and failed["file"] == created["file"]
    assert d.wait_event("agent_settled", 2)["event"]["aborted"] is True
    assert "No space left on device" in d.call("getState")["lastError"]
    assert texts(d.call("getMessages")["messages"]) == [("user", "first"), ("assistant", "You said: first")]
    assert len([e for e in lines_of(created["file"]) if e["type"] == "message"]) == 2  # no partial line

    before = sorted(p.name for p in (ws / ".pi" / "sessions").iterdir())
    error = d.request("session/new")["error"]
    assert error["code"] == -32008 and "No space left on device" in error["message"]
    assert sorted(p.name for p in (ws / ".pi" / "sessions").iterdir()) == before  # nothing half-made left

    filler.unlink()
    assert d.call("prompt", {"sessionId": created["sessionId"], "text": "third"})["disposition"] == "started"
    d.wait_event("agent_settled", 3)
    expected = [("user", "first"), ("assistant", "You said: first"),
                ("user", "third"), ("assistant", "You said: third")]
    assert texts(d.call("getMessages")["messages"]) == expected
    assert d.close() == 0
    d2 = spawn(cwd=str(ws))
    loaded = d2.call("session/load", {"sessionId": created["sessionId"]})
    assert "skipped" not in loaded and "tornLineSavedTo" not in loaded
    assert texts(d2.call("getMessages")["messages"]) == expected
    assert len(lines_of(created["file"])) == 1 + 2 + 4


def test_an_answer_that_cannot_be_stored_stops_the_run_and_is_not_announced(spawn, mounts, tmp_path):
    ws = small_disk(mounts, tmp_path)
    script = write_script(tmp_path / "script.json", [text("hello"), text("long " + "y" * 30_000), text("ok")])
    d = spawn("--faux-script", str(script), "--model", "faux/script", cwd=str(ws))
    sid = d.call("session/new")["sessionId"]
    d.call("prompt", {"text": "first"})
    d.wait_event("agent_settled")
    filler = fill(ws, leave=8192)  # room for the prompt, not for the answer

    assert d.call("prompt", {"text": "second"})["disposition"] == "started"
    settled = d.wait_event("agent_settled", 2)
    assert settled["event"]["aborted"] is True
    failed = d.wait_event("session_write_failed")["event"]
    assert failed["errno"] == "ENOSPC" and "No space left on device" in failed["error"]
    ends = [e["event"]["message"]["role"] for e in d.events if e["event"]["type"] == "message_end"]
    assert ends == ["user", "assistant", "user"]  # the unsaved answer was never announced as final
    assert "No space left on device" in d.call("getState")["lastError"]
    stored = [("user", "first"), ("assistant", "hello"), ("user", "second")]
    assert texts(d.call("getMessages")["messages"]) == stored

    filler.unlink()
    d.call("prompt", {"text": "third"})
    d.wait_event("agent_settled", 3)
    assert d.close() == 0
    d2 = spawn("--faux-script", str(script), "--model", "faux/script", cwd=str(ws))
    d2.call("session/load", {"sessionId": sid})
    assert texts(d2.call("getMessages")["messages"]) == stored + [("user", "third"), ("assistant", "ok")]


def test_a_read_only_workspace_opens_sessions_read_only(spawn, mounts, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    d = spawn("--model", "faux/echo", cwd=str(ws))
    sid = d.call("session/new", {"name": "kept"})["sessionId"]
    d.call("prompt", {"text": "stored question"})
    d.wait_event("agent_settled")
    assert d.close() == 0
    stored = sorted((p.name, p.read_bytes()) for p in (ws / ".pi" / "sessions").iterdir())
    mounts(ws, "--bind", str(ws))
    subprocess.run(["mount", "-o", "remount,ro,bind", str(ws)], check=True)

    d = spawn("--model", "faux/echo", cwd=str(ws))
    state = d.call("getState")  # no session yet, and none can be created: one without a file
    assert "read-only" in state["readOnly"] and "sessionFile" not in state and state["messageCount"] == 0
    assert d.request("prompt", {"text": "hi"})["error"]["code"] == -32009
    error = d.request("session/new")["error"]
    assert error["code"] == -32009 and "read-only" in error["message"]

    assert [s["sessionId"] for s in d.call("session/list")["sessions"]] == [sid]
    loaded = d.call("session/load", {"sessionId": sid, "replay": True})
    assert loaded["state"]["readOnly"] and loaded["state"]["messageCount"] == 2
    assert loaded["state"]["sessionName"] == "kept"
    d.wait_event("message_end", 2, session_id=sid)
    assert texts(d.call("getMessages")["messages"]) == [("user", "stored question"),
                                                          ("assistant", "You said: stored question")]
    assert d.call("getState")["readOnly"]
    entry_id = d.call("session/entries")["entries"][-1]["id"]
    assert d.call("session/tree")["nodes"] and d.call("session/stats")["userMessages"] == 1
    for method, params in [("prompt", {"text": "more"}), ("session/setName", {"name": "x"}),
                           ("setThinkingLevel", {"level": "low"}), ("steer", {"text": "s"}), ("continue", {}),
                           ("bash", {"command": "true"}), ("session/label", {"entryId": entry_id, "label": "x"}),
                           ("session/delete", {}), ("compact", {})]:
        error = d.request(method, params)["error"]
        assert error["code"] == -32009 and "read-only" in error["message"], (method, error)
    assert d.call("getState")["isStreaming"] is False
    assert sorted((p.name, p.read_bytes()) for p in (ws / ".pi" / "sessions").iterdir()) == stored


def test_a_tool_call_that_cannot_be_stored_is_not_run(spawn, mounts, tmp_path):
    ws = small_disk(mounts, tmp_path)
    marker = tmp_path / "ran"
    call = {"content": [{"type": "text", "text": "z" * 30_000},
                        {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": f"touch {marker}"}}],
            "stopReason": "toolUse"}
    script = write_script(tmp_path / "script.json", [call, text("done")])
    d = spawn("--faux-script", str(script), "--model", "faux/script", cwd=str(ws))
    d.call("session/new")
    filler = fill(ws, leave=8192)
    d.call("prompt", {"text": "run it"})
    assert d.wait_event("agent_settled")["event"]["aborted"] is True
    assert d.wait_event("session_write_failed")["event"]["errno"] == "ENOSPC"
    assert not marker.exists()
    assert [m["role"] for m in d.call("getMessages")["messages"]] == ["user"]
    filler.unlink()
