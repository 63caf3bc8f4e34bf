"""Damaged and foreign session files through the daemon: what loads, what is set aside,
and which files session/load and session/export may touch."""

import json
from pathlib import Path

from client import Daemon


def conversation(tmp_path, prompts=("first", "second", "third")) -> tuple[Path, str, Path]:
    """A workspace holding one stored session with a prompt and an answer per prompt."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    d = Daemon("--model", "faux/echo", cwd=str(ws))
    try:
        created = d.call("session/new")
        for n, prompt in enumerate(prompts, 1):
            d.call("prompt", {"text": prompt})
            d.wait_event("agent_settled", n)
        assert d.close() == 0
    finally:
        d.kill()
    return ws, created["sessionId"], Path(created["file"])


def user_texts(d, sid=None) -> list[str]:
    messages = d.call("getMessages", {"sessionId": sid} if sid else {})["messages"]
    return [m["content"] for m in messages if m["role"] == "user"]


def replace_line(file: Path, predicate, new: bytes) -> int:
    """Replace the first line whose entry matches; its line number (1 = header)."""
    lines = file.read_bytes().split(b"\n")
    n = next(i for i, line in enumerate(lines) if line and predicate(json.loads(line)))
    lines[n] = new
    file.write_bytes(b"\n".join(lines))
    return n + 1


def is_user(text):
    return lambda e: e.get("type") == "message" and e["message"].get("content") == text


def test_a_garbage_line_in_the_middle_loses_nothing_else(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    line = replace_line(file, is_user("second"), b'{"type":"message","id":"dead')
    before = file.read_bytes()
    d = spawn("--model", "faux/echo", cwd=str(ws))
    loaded = d.call("session/load", {"sessionId": sid})
    assert loaded["skipped"] == [{"line": line, "reason": "not valid JSON"}]
    assert loaded["state"]["messageCount"] == 5
    assert user_texts(d) == ["first", "third"]  # everything around the bad line is there
    roles = [m["role"] for m in d.call("getMessages")["messages"]]
    assert roles == ["user", "assistant", "assistant", "user", "assistant"]
    assert file.read_bytes() == before  # the bad line is kept as it was
    d.call("prompt", {"text": "fourth"})
    d.wait_event("agent_settled")
    assert user_texts(d) == ["first", "third", "fourth"]
    assert b'{"type":"message","id":"dead\n' in file.read_bytes()
    assert d.close() == 0
    d2 = spawn(cwd=str(ws))
    assert d2.call("session/load", {"sessionId": sid})["skipped"] == [{"line": line, "reason": "not valid JSON"}]
    assert user_texts(d2) == ["first", "third", "fourth"]


def test_a_wrongly_typed_message_is_set_aside_and_its_children_move_up(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    entries = [json.loads(x) for x in file.read_bytes().splitlines()]
    bad = next(e for e in entries if is_user("second")(e))
    bad["message"]["content"] = 5
    line = replace_line(file, is_user("second"), json.dumps(bad).encode())
    before = file.read_bytes()
    d = spawn("--model", "faux/echo", cwd=str(ws))
    loaded = d.call("session/load", {"sessionId": sid})
    assert [s["line"] for s in loaded["skipped"]] == [line]
    assert "message.content" in loaded["skipped"][0]["reason"]
    assert user_texts(d) == ["first", "third"] and loaded["state"]["messageCount"] == 5
    tree = d.call("session/tree")
    ids = {n["id"] for n in tree["nodes"]}
    assert bad["id"] not in ids
    child = next(e for e in entries if e.get("parentId") == bad["id"])
    node = next(n for n in tree["nodes"] if n["id"] == child["id"])
    assert node["parentId"] == bad["parentId"]  # hangs under the set-aside entry's parent
    assert d.call("session/stats")["userMessages"] == 2
    assert [s["firstMessage"] for s in d.call("session/list")["sessions"]] == ["first"]
    assert file.read_bytes() == before


def test_a_long_integer_in_a_stored_message_is_loaded_exactly(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path)
    entries = [json.loads(x) for x in file.read_bytes().splitlines()]
    n = next(i for i, e in enumerate(entries) if is_user("second")(e)) + 1  # the answer to "second"
    answer = entries[n]
    big = 123456789012345678901234567890  # more digits than a 64-bit integer or a double holds
    answer["message"]["content"].append({"type": "toolCall", "id": "c1", "name": "read",
                                         "arguments": {"path": "a.py", "offset": big, "limit": -big}})
    answer["message"]["timestamp"] = 98765432109876543210
    replace_line(file, lambda e: e.get("id") == answer["id"], json.dumps(answer).encode())
    d = spawn("--model", "faux/echo", cwd=str(ws))
    assert "skipped" not in d.call("session/load", {"sessionId": sid})
    stored = next(e for e in d.call("session/entries", {"scope": "file"})["entries"] if e["id"] == answer["id"])
    assert stored == answer and stored["message"]["timestamp"] == 98765432109876543210
    message = d.call("getMessages")["messages"][3]
    assert message["timestamp"] == 98765432109876543210
    assert message["content"][-1]["arguments"] == {"path": "a.py", "offset": big, "limit": -big}


def test_the_header_version_is_checked(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path, prompts=("only",))
    lines = file.read_bytes().split(b"\n")
    header = json.loads(lines[0])
    d = spawn(cwd=str(ws))
    for version, words in [(4, "newer than this daemon reads"), (None, "no valid format version"),
                           ("3", "no valid format version")]:
        changed = dict(header, version=version) if version is not None else \
            {k: v for k, v in header.items() if k != "version"}
        file.write_bytes(b"\n".join([json.dumps(changed).encode(), *lines[1:]]))
        error = d.request("session/load", {"sessionId": sid})["error"]
        assert error["code"] == -32007 and words in error["message"], (version, error)
    file.write_bytes(b"\n".join([json.dumps({k: v for k, v in header.items() if k != "id"}).encode(), *lines[1:]]))
    error = d.request("session/load", {"file": str(file)})["error"]
    assert error["code"] == -32007 and "no session id" in error["message"]
    assert d.call("getState")["isStreaming"] is False


def test_load_refuses_and_never_touches_a_file_outside_the_session_folder(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path, prompts=("only",))
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(file.read_bytes().replace(sid.encode(), b"0ther-id") + b'{"type":"message","id":"to')
    before = outside.read_bytes()
    (ws / ".pi" / "sessions" / "2026-01-01T00-00-00Z_linked.jsonl").symlink_to(outside)
    d = spawn("--model", "faux/echo", cwd=str(ws))
    for params, field in [({"file": str(outside)}, "params.file"), ({"file": "../elsewhere.jsonl"}, "params.file")]:
        error = d.request("session/load", params)["error"]
        assert error["code"] == -32602 and field in error["message"] and "allowOutside" in error["message"], error
        assert outside.read_bytes() == before
    error = d.request("session/load", {"sessionId": "linked"})["error"]  # a symlink in the folder: never followed
    assert error["code"] == -32007 and "symbolic link" in error["message"], error
    assert outside.read_bytes() == before
    assert not list(tmp_path.glob("elsewhere.jsonl.torn-*"))

    loaded = d.call("session/load", {"file": str(outside), "allowOutside": True})
    assert loaded["sessionId"] == "0ther-id" and "outside the session folder" in loaded["state"]["readOnly"]
    assert user_texts(d) == ["only"]
    error = d.request("prompt", {"text": "more"})["error"]
    assert error["code"] == -32009
    assert outside.read_bytes() == before  # not even the torn last line was cut off
    assert d.call("session/load", {"sessionId": sid})["state"].get("readOnly") is None


def test_export_writes_only_inside_the_workspace_unless_allowed(spawn, tmp_path):
    ws, sid, file = conversation(tmp_path, prompts=("only",))
    d = spawn(cwd=str(ws))
    d.call("session/load", {"sessionId": sid})
    target = tmp_path / "out.md"
    for path in [str(target), "../out.md"]:
        error = d.request("session/export", {"format": "markdown", "path": path})["error"]
        assert error["code"] == -32602 and "params.path" in error["message"]
        assert "outside the workspace" in error["message"]
    (ws / "link").symlink_to(tmp_path)
    error = d.request("session/export", {"format": "markdown", "path": "link/out.md"})["error"]
    assert error["code"] == -32602 and "outside the workspace" in error["message"]
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (ws / "dir").mkdir()
    (ws / "dir" / "alias.md").hardlink_to(victim)
    error = d.request("session/export", {"format": "markdown", "path": "dir/alias.md"})["error"]
    assert error["code"] == -32602 and "hard links" in error["message"]
    (ws / "dir" / "sym.md").symlink_to(victim)
    error = d.request("session/export", {"format": "markdown", "path": "dir/sym.md"})["error"]
    assert error["code"] == -32602
    assert victim.read_text() == "keep me" and not target.exists()
    inside = d.call("session/export", {"format": "markdown", "path": "notes/chat.md"})["file"]
    assert Path(inside) == ws.resolve() / "notes" / "chat.md" and "# Session" in Path(inside).read_text()
    assert Path(d.call("session/export", {"format": "html"})["file"]).parent == ws.resolve() / ".pi" / "exports"
    written = d.call("session/export", {"format": "markdown", "path": str(target), "allowOutside": True})["file"]
    assert Path(written) == target and target.read_text().startswith("# Session")
