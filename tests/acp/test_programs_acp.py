"""ACP sessions with their own roots (``additionalDirectories``) and the programs the daemon
runs itself, over the real ``pi-daemon --acp``.

A folder in ``PATH`` is a fair place for the daemon's git, bwrap and shell while no command
can write it. Once a session names it as one of its roots, that session's commands may write
there, so from then on no session's git, bwrap or shell comes from it (a program found there
before is looked up again). The shell is left out here: one in a folder under ``/tmp``, as
this test's are, is not seen inside the sandbox, whose ``/tmp`` is its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from client import clean_env, write_script
from helpers import KEY, git_repo
from lines import Lines

from test_daemon_programs import plant


def bash(command: str, call_id: str) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "bash", "arguments": {"command": command}}],
            "stopReason": "toolUse"}


def done() -> dict:
    return {"content": [{"type": "text", "text": "done"}]}


def test_a_path_folder_that_becomes_a_sessions_root_is_no_longer_searched(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    git_repo(ws)
    notes = tmp_path / "notes"
    ran = tmp_path / "ran.log"
    plant(notes / "bin", ran, ("bwrap", "git"))  # (a shell under /tmp is not seen inside the sandbox)
    faux = write_script(tmp_path / "script.json", [bash("echo two >> a.txt", "b1"), done(),
                                                   bash("echo three >> a.txt", "b2"), done()], modelId="s")
    env = clean_env(str(tmp_path / "home"), OPENAI_API_KEY=KEY, PATH=f"{notes / 'bin'}:{os.environ['PATH']}")
    daemon = Lines("--acp", "--allow", "bash", "--faux-script", str(faux), "--model", "faux/s", cwd=ws, env=env)
    try:
        assert "result" in daemon.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})

        def run(**params: object) -> list[dict]:
            session = daemon.request("session/new", {"cwd": str(ws), "mcpServers": [], **params})["result"]
            answer = daemon.request("session/prompt", {"sessionId": session["sessionId"],
                                                       "prompt": [{"type": "text", "text": "go"}]})
            assert answer["result"]["stopReason"] == "end_turn", answer
            return [u for u in daemon.updates(session["sessionId"])
                    if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")]

        first = run()
        assert [u["status"] for u in first] == ["completed"], json.dumps(first)
        before = ran.read_text()  # the control: while no command could write there, notes/bin was PATH's first
        assert "bwrap" in before and "git" in before
        second = run(additionalDirectories=[str(notes)])
        assert [u["status"] for u in second] == ["completed"], json.dumps(second)
        assert (ws / "a.txt").read_text() == "one\ntwo\nthree\n"
        assert ran.read_text() == before  # nothing of notes/bin ran once a session could write there
    finally:
        assert b"Traceback" not in daemon.close()
