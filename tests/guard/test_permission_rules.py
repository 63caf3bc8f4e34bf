"""Permission rules for paths and tools, the older rule form, and the home store."""

import json
from pathlib import Path

from pi_daemon.guard.permission_rules import Rule, allows, describe, rejects, rule_for, rules_from
from pi_daemon.guard.permission_store import RememberedAnswers, workspace_rules


def test_always_for_a_write_remembers_that_path_only(tmp_path):
    rule = rule_for("write", {"path": "./src/../src/app.py"}, tmp_path)
    assert rule == Rule("write", "path", "src/app.py")
    assert allows([rule], "write", {"path": "src/app.py"}, tmp_path)
    assert allows([rule], "write", {"path": str(tmp_path / "src" / "app.py")}, tmp_path)
    assert not allows([rule], "write", {"path": "src/other.py"}, tmp_path)
    assert not allows([rule], "edit", {"path": "src/app.py"}, tmp_path)  # per tool
    assert describe(rule) == "write calls on `src/app.py`"


def test_path_globs(tmp_path):
    one = [Rule("edit", "path", "src/*.py")]
    deep = [Rule("edit", "path", "src/**")]
    assert allows(one, "edit", {"path": "src/a.py"}, tmp_path)
    assert not allows(one, "edit", {"path": "src/sub/a.py"}, tmp_path)
    assert allows(deep, "edit", {"path": "src/sub/a.py"}, tmp_path)
    assert not allows(deep, "edit", {"path": "srcx/a.py"}, tmp_path)
    assert rejects(deep, "edit", {"path": "src/sub/a.py"}, tmp_path)


def test_a_symlink_does_not_disguise_the_path(tmp_path):
    (tmp_path / ".pi").mkdir()
    (tmp_path / "innocent.txt").symlink_to(tmp_path / ".pi" / "permissions.json")
    rule = Rule("write", "path", "innocent.txt")
    assert not allows([rule], "write", {"path": "innocent.txt"}, tmp_path)
    assert rejects([Rule("write", "path", ".pi/**")], "write", {"path": "innocent.txt"}, tmp_path)


def test_the_older_form_and_bad_rules():
    assert rules_from([{"tool": "bash", "prefix": "git status"}, {"tool": "write"}, "junk", {"tool": 3},
                       {"tool": "bash", "scope": "path", "pattern": "x"}, {"tool": "write", "scope": "prefix"},
                       {"tool": "edit", "scope": "nope", "pattern": "x"}]) == [
        Rule("bash", "prefix", "git status"), Rule("write", "tool")]


def test_remembered_answers_live_in_the_home_per_workspace(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("PI_DAEMON_HOME", str(home))
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    RememberedAnswers(a).add("allow", Rule("bash", "prefix", "npm test"))
    RememberedAnswers(a).add("allow", Rule("bash", "prefix", "npm test"))  # once
    RememberedAnswers(b).add("reject", Rule("write", "tool"))
    assert RememberedAnswers(a).load() == {"allow": [Rule("bash", "prefix", "npm test")], "reject": []}
    assert RememberedAnswers(b).load() == {"allow": [], "reject": [Rule("write", "tool")]}
    stored = json.loads((home / "permissions.json").read_text())
    assert set(stored["workspaces"]) == {str(a.resolve()), str(b.resolve())}
    assert not (a / ".pi").exists()


def test_a_broken_file_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_DAEMON_HOME", str(tmp_path))
    (tmp_path / "permissions.json").write_text("{not json")
    assert RememberedAnswers(Path(tmp_path)).load() == {"allow": [], "reject": []}
    (tmp_path / ".pi").mkdir()
    (tmp_path / ".pi" / "permissions.json").write_text('["a list"]')
    assert workspace_rules(tmp_path) == {"allow": [], "reject": []}


def test_a_gated_tool_with_a_path_remembers_the_path_and_one_without_the_tool(tmp_path):
    assert rule_for("read", {"path": "notes.md"}, tmp_path) == Rule("read", "path", "notes.md")
    assert rule_for("grep", {"pattern": "x"}, tmp_path) == Rule("grep", "tool")
    assert allows([Rule("grep", "tool")], "grep", {"pattern": "y"}, tmp_path)
