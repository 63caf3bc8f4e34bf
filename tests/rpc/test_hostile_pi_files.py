"""What a repository ships in ``.pi/`` is data, never a path to follow, through the real daemon:
session files that are symlinks to endless devices, FIFOs or the daemon's own stderr, a first
message nested a million deep, configuration files that never end, and ``.pi/sessions`` or
``.pi/tmp`` pointing outside the workspace."""

from __future__ import annotations

import os
import time
from pathlib import Path

from agent_shell import bash_call, home_with, script, tool_ends

ID = "0123abcd-0000-4000-8000-{:012d}"


def good_session(spawn, ws: Path) -> str:
    d = spawn("--model", "faux/echo", cwd=str(ws))
    d.call("prompt", {"text": "the good one"})
    d.wait_event("agent_settled", timeout=30)
    session_id = d.call("getState")["sessionId"]
    d.kill()
    return session_id


def test_hostile_session_files_are_listed_as_damaged_and_the_daemon_keeps_serving(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    good = good_session(spawn, ws)
    sessions = ws / ".pi" / "sessions"
    for n, target in enumerate(["/dev/zero", "/dev/urandom", "/proc/self/fd/2"]):
        (sessions / f"2026-01-01T00-00-0{n}_{ID.format(n)}.jsonl").symlink_to(target)
    os.mkfifo(sessions / f"2026-01-01T00-00-03_{ID.format(3)}.jsonl")
    nested = sessions / f"2026-01-01T00-00-04_{ID.format(4)}.jsonl"
    deep = "[" * 1_000_000 + "]" * 1_000_000
    nested.write_text('{"type":"session","version":3,"id":"%s","timestamp":"t","cwd":"%s"}\n'
                      '{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user",'
                      '"content":%s,"timestamp":1}}\n' % (ID.format(4), ws, deep))
    d = spawn("--model", "faux/echo", cwd=str(ws))
    started = time.monotonic()
    listed = {s["sessionId"]: s for s in d.call("session/list", {})["sessions"]}
    assert time.monotonic() - started < 30  # no file held it (a device or a fifo would for ever)
    assert listed[good]["firstMessage"] == "the good one" and "damaged" not in listed[good]
    assert {listed[ID.format(n)]["damaged"] for n in range(3)} == {"a symbolic link, not followed"}
    assert listed[ID.format(3)]["damaged"] == "not a regular file"
    assert listed[ID.format(4)]["messageCount"] == 1  # readable but for its message: listed, not fatal
    for n in (0, 3):
        error = d.request("session/load", {"sessionId": ID.format(n)})["error"]
        assert "symbolic link" in error["message"] or "not a regular file" in error["message"]
    assert d.call("session/load", {"sessionId": good})["sessionId"] == good
    assert d.call("getState")["sessionId"] == good


def test_endless_configuration_files_do_not_hold_the_daemon(spawn, tmp_path):
    ws = tmp_path / "ws"
    (ws / ".pi").mkdir(parents=True)
    (ws / ".pi" / "settings.json").symlink_to("/dev/zero")
    (ws / ".pi" / "permissions.json").symlink_to("/dev/urandom")
    os.mkfifo(ws / ".pi" / "models.json")
    os.mkfifo(ws / ".pi" / "mcp.json")
    d = spawn("--model", "faux/echo", cwd=str(ws))
    d.call("prompt", {"text": "hello"})
    d.wait_event("agent_settled")
    assert d.call("getState")["isStreaming"] is False


def test_a_session_folder_pointing_outside_is_never_written_or_read(spawn, tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / ".pi").mkdir(parents=True)
    outside.mkdir()
    (ws / ".pi" / "sessions").symlink_to(outside)
    d = spawn("--model", "faux/echo", cwd=str(ws))
    error = d.request("prompt", {"text": "hello"})["error"]  # refused, so nothing typed is lost
    assert error["code"] == -32009 and "symbolic link is never written through" in error["message"]
    assert list(outside.iterdir()) == []
    assert d.call("session/list", {})["sessions"] == []
    assert "symbolic link" in d.request("session/load", {"sessionId": ID.format(1)})["error"]["message"]


def test_a_command_output_folder_pointing_outside_is_never_written_or_pruned(spawn, tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / ".pi").mkdir(parents=True)
    outside.mkdir()
    old = outside / "bash-20200101-000000-x.log"
    old.write_text("the user's own file, named like a command log\n")
    os.utime(old, (time.time() - 7 * 86400,) * 2)
    (ws / ".pi" / "tmp").symlink_to(outside)
    home = home_with(tmp_path, {"sandbox": {"enabled": False}})
    d = spawn("--allow", "bash", "--faux-script", script(tmp_path, bash_call("seq 1 100000")), "--model", "faux/s",
              env={"home": home}, cwd=str(ws))
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=30)
    end = tool_ends(d)[0]
    assert not end["isError"] and end["result"]["details"]["truncated"] is True
    assert end["result"]["details"]["fullOutputPath"] is None
    assert "100000" in end["result"]["content"][0]["text"]  # the tail is still there
    assert sorted(p.name for p in outside.iterdir()) == [old.name]
