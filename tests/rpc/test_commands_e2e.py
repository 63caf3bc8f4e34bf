"""Slash commands through the daemon: templates and skills as the loopback model sees them, built-ins."""

import json
import os
import time
from pathlib import Path

import pytest

from loopback import LoopbackServer, Reply, openai_text
from test_tools_e2e import calls, project, results


@pytest.fixture
def server():
    s = LoopbackServer()
    yield s
    s.close()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def start(spawn, tmp_path, server, *args):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return spawn("--model", "local/coder", *args, cwd=project(tmp_path, server), env={"PI_DAEMON_HOME": str(home)})


def run(d, text, timeout=30):
    count = len([e for e in d.events if e["event"]["type"] == "agent_settled"])
    result = d.call("prompt", {"text": text})
    d.wait_event("agent_settled", count + 1, timeout=timeout)
    return result


def last_user(request) -> str:
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


def test_templates_expand_before_the_model_and_the_message_keeps_what_was_typed(spawn, tmp_path, server):
    write(tmp_path / "home" / "prompts" / "review.md",
          '---\ndescription: Review the staged changes\nargument-hint: "[focus] [files...]"\n---\n'
          "Review the staged changes. Focus on ${1:-correctness}. Files: ${@:2}.\n")
    write(tmp_path / ".pi" / "prompts" / "explain.md", "Explain $1 to a newcomer, in $2 words.\n")
    write(tmp_path / ".pi" / "prompts" / "review.md", "A workspace file never replaces the user's own.\n")
    server.script(*[Reply(body=openai_text(f"answer {n}")) for n in range(3)])
    d = start(spawn, tmp_path, server)
    run(d, '/review "API compatibility" a.py b.py')
    assert last_user(server.requests[0]) == ("Review the staged changes. Focus on API compatibility. "
                                             "Files: a.py b.py.")
    run(d, "/review")
    assert last_user(server.requests[1]) == "Review the staged changes. Focus on correctness. Files: ."
    run(d, "/explain closures 50")
    assert last_user(server.requests[2]) == "Explain closures to a newcomer, in 50 words."
    user = [m for m in d.call("getMessages")["messages"] if m["role"] == "user"][0]
    assert user["content"].startswith("Review the staged changes. Focus on API compatibility.")
    assert user["command"] == {"name": "review", "source": "template", "input": '/review "API compatibility" a.py b.py'}
    stored = [json.loads(line) for line in Path(d.call("getState")["sessionFile"]).read_text().splitlines()]
    assert any(e.get("message", {}).get("command", {}).get("name") == "explain" for e in stored)
    commands = {c["name"]: c for c in d.call("getCommands")["commands"]}
    assert commands["review"] == {"name": "review", "description": "Review the staged changes", "source": "template",
                                  "argumentHint": "[focus] [files...]",
                                  "file": str(tmp_path / "home" / "prompts" / "review.md")}
    assert commands["explain"]["description"] == "Explain $1 to a newcomer, in $2 words."
    assert {"compact", "new", "model", "thinking", "export"} <= {n for n, c in commands.items() if c["source"] == "builtin"}
    assert any("already defined" in p for p in d.call("getCommands")["problems"])


def test_follow_up_and_steer_expand_templates_too(spawn, tmp_path, server):
    write(tmp_path / ".pi" / "prompts" / "more.md", "Now also check $@.")
    server.script(Reply(body=openai_text("slow answer", pieces=10), piece=60, delay=0.15), Reply(body=openai_text("ok")))
    d = start(spawn, tmp_path, server)
    d.call("prompt", {"text": "first"})
    d.wait_event("message_update", 2)
    d.call("followUp", {"text": "/more the tests"})
    d.wait_event("agent_settled", timeout=30)
    assert last_user(server.requests[1]) == "Now also check the tests."
    error = d.request("steer", {"text": "/compact"})["error"]
    assert error["code"] == -32602 and "cannot be queued" in error["message"]


def test_unknown_commands_are_errors_and_paths_reach_the_model(spawn, tmp_path, server):
    server.script(Reply(body=openai_text("a path")), Reply(body=openai_text("escaped")))
    d = start(spawn, tmp_path, server)
    error = d.request("prompt", {"text": "/deploy now"})["error"]
    assert error["code"] == -32010 and "unknown command /deploy" in error["message"] and "//" in error["message"]
    assert server.requests == []
    run(d, "/usr/bin/foo is broken")
    assert last_user(server.requests[0]) == "/usr/bin/foo is broken"
    run(d, "//deploy is a word I like")
    assert last_user(server.requests[1]) == "/deploy is a word I like"


def test_skills_join_the_system_prompt_and_load_on_demand(spawn, tmp_path, server):
    write(tmp_path / ".pi" / "skills" / "pdf-tools" / "SKILL.md",
          "---\nname: pdf-tools\ndescription: Extract text from PDF files. Use when reading PDFs.\n---\n"
          "# PDF tools\nRead references/formats.md first, then run scripts/extract.sh.\n")
    write(tmp_path / ".pi" / "skills" / "pdf-tools" / "references" / "formats.md", "PDF 1.7 only.")
    write(tmp_path / ".claude" / "skills" / "lint" / "SKILL.md",
          "---\nname: lint\ndescription: Lint the code base the house way.\n---\nRun ruff, then mypy.\n")
    write(tmp_path / "home" / "skills" / "mine" / "SKILL.md",
          "---\nname: commit-style\ndescription: >\n  Write commit messages\n  the way I like them.\n---\nSay why.\n")
    outside = write(tmp_path / "secret.txt", "---\nname: stolen\ndescription: x\n---\nTOKEN=abc\n")
    (tmp_path / ".pi" / "skills" / "evil").mkdir()
    os.symlink("../../../secret.txt", tmp_path / ".pi" / "skills" / "evil" / "SKILL.md")
    del outside
    server.script(calls(("s", "skill", {"name": "pdf-tools"}),
                        ("f", "skill", {"name": "pdf-tools", "file": "references/formats.md"}),
                        ("x", "skill", {"name": "pdf-tools", "file": "../../../secret.txt"})),
                  Reply(body=openai_text("loaded")), Reply(body=openai_text("forced")))
    d = start(spawn, tmp_path, server)
    run(d, "summarise report.pdf")
    system = server.requests[0].body["messages"][0]["content"]
    assert "- pdf-tools: Extract text from PDF files. Use when reading PDFs." in system
    assert "- lint: Lint the code base the house way." in system
    assert "- commit-style: Write commit messages the way I like them." in system
    assert "Run ruff" not in system and "PDF tools" not in system and "stolen" not in system
    assert "skill" in [t["function"]["name"] for t in server.requests[0].body["tools"]]
    ends = {e["toolCallId"]: e for e in results(d, 3)}
    assert ends["s"]["result"]["content"][0]["text"].startswith("# PDF tools")
    assert ends["f"]["result"]["content"][0]["text"] == "PDF 1.7 only."
    assert ends["x"]["isError"] and "TOKEN" not in json.dumps(ends["x"])
    run(d, "/skill:lint only src/")
    forced = last_user(server.requests[2])
    assert 'Use the skill "lint"' in forced and "Run ruff, then mypy." in forced and forced.endswith("Request: only src/")
    commands = {c["name"]: c for c in d.call("getCommands")["commands"]}
    assert commands["skill:pdf-tools"]["source"] == "skill" and "skill:stolen" not in commands
    assert any("evil" in p and "outside" in p for p in d.call("getCommands")["problems"])


def test_commands_update_when_the_files_change(spawn, tmp_path, server):
    d = start(spawn, tmp_path, server)
    session = d.call("session/new")["sessionId"]
    write(tmp_path / ".pi" / "prompts" / "ship.md", "---\ndescription: Ship it\n---\nShip $1.")
    update = d.wait_event("commands_update", session_id=session, timeout=20)["event"]
    assert {"name": "ship", "description": "Ship it", "source": "template",
            "file": str(tmp_path / ".pi" / "prompts" / "ship.md")} in update["commands"]
    (tmp_path / ".pi" / "prompts" / "ship.md").unlink()
    update = d.wait_event("commands_update", 2, session_id=session, timeout=20)["event"]
    assert not any(c["name"] == "ship" for c in update["commands"])


def test_builtin_commands_run_in_the_daemon(spawn, tmp_path, server):
    write(tmp_path / ".pi" / "settings.json", '{"compaction": {"reserveTokens": 100, "keepRecentTokens": 10}}')
    server.script(Reply(body=openai_text("first answer " * 40)), Reply(body=openai_text("second answer " * 40)),
                  Reply(body=openai_text("## Goal\nsummary of it all")))
    d = start(spawn, tmp_path, server)
    d.call("setAutoCompaction", {"enabled": False})
    run(d, "one " * 80)
    run(d, "two " * 80)
    compacted = d.call("prompt", {"text": "/compact keep the names"})
    assert compacted["disposition"] == "command" and compacted["command"]["name"] == "compact"
    assert compacted["command"]["result"]["summary"] == "## Goal\nsummary of it all"
    assert "keep the names" in json.dumps(server.requests[2].body["messages"])
    assert d.call("getMessages")["messages"][0]["role"] == "compactionSummary"
    assert len(server.requests) == 3  # the command itself never reached the model as a prompt

    thinking = d.call("prompt", {"text": "/thinking high"})["command"]
    assert thinking == {"name": "thinking", "result": {"level": "off"},  # the model cannot think
                        "summary": "The thinking level is now off."}
    assert d.request("prompt", {"text": "/thinking loud"})["error"]["code"] == -32602
    assert d.call("prompt", {"text": "/model local/coder"})["command"]["result"]["model"]["id"] == "coder"
    assert d.request("prompt", {"text": "/model nowhere/none"})["error"]["code"] == -32004
    exported = d.call("prompt", {"text": "/export markdown"})["command"]["result"]
    assert "summary of it all" in Path(exported["file"]).read_text() and exported["file"].endswith(".md")
    before = d.call("getState")["sessionId"]
    created = d.call("prompt", {"text": "/new"})["command"]["result"]
    assert created["sessionId"] != before and d.call("getState")["sessionId"] == created["sessionId"]
    assert len(server.requests) == 3


def test_a_skill_swapped_for_a_symlink_after_it_was_listed_is_not_read(spawn, tmp_path, server):
    """A command can replace SKILL.md with a symlink to a file outside the workspace between the
    listing and the read (here with the same size and time, so the listing does not change): the
    file is opened at the moment it is read, beneath the workspace, and the symlink refused."""
    skill = write(tmp_path / ".claude" / "skills" / "x" / "SKILL.md",
                  "---\nname: x\ndescription: Does x.\n---\nThe real instructions.\n")
    secret = tmp_path.parent / f"{tmp_path.name}-secret.txt"
    secret.write_text("S" * (skill.stat().st_size - 1) + "\n")
    os.utime(secret, ns=(skill.stat().st_atime_ns, skill.stat().st_mtime_ns))
    server.script(calls(("s", "skill", {"name": "x"})), Reply(body=openai_text("done")))
    d = start(spawn, tmp_path, server)
    assert "skill:x" in {c["name"] for c in d.call("getCommands")["commands"]}
    skill.unlink()
    skill.symlink_to(secret)
    run(d, "use x")
    end = results(d, 1)[0]
    assert end["isError"] and "SSSS" not in json.dumps(end) and "outside" in end["result"]["content"][0]["text"]
    assert "SSSS" not in json.dumps(server.requests[-1].body)
    assert "SSSS" not in json.dumps(d.request("prompt", {"text": "/skill:x now"}))
