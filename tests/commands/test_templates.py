"""Template arguments and placeholders, frontmatter, and what counts as a command."""

import pytest

from pi_daemon.commands import frontmatter
from pi_daemon.commands.catalog import Catalog, UnknownCommand
from pi_daemon.commands.templates import expand, split_args


def test_arguments_split_like_pi():
    assert split_args('a "b c" doesn\'t "the \\"fast\\" path" \'x y\' "open') == [
        "a", "b c", "doesn't", 'the "fast" path', "x y", '"open']
    assert split_args("   ") == []


@pytest.mark.parametrize("body, args, expected", [
    ("Fix $1 in $2", ["bug", "a.py"], "Fix bug in a.py"),
    ("All: $@ / $ARGUMENTS", ["x", "y"], "All: x y / x y"),
    ("Focus on ${1:-correctness}", [], "Focus on correctness"),
    ("Focus on ${1:-correctness}", ["speed"], "Focus on speed"),
    ("Files ${@:2}", ["a", "b", "c"], "Files b c"),
    ("Two ${@:2:2}", ["a", "b", "c", "d"], "Two b c"),
    ("Or ${@:-nothing}", [], "Or nothing"),
    ("Missing [$3]", ["a"], "Missing []"),
    ("No placeholder", ["a", "b"], "No placeholder\n\na b"),
    ("No placeholder", [], "No placeholder"),
])
def test_placeholders(body, args, expected):
    assert expand(body, args) == expected


def test_frontmatter_subset():
    fields, body = frontmatter.split('---\nname: x\ndescription: >\n  one\n  two\nargument-hint: "[a]"\n---\n\nBody\n')
    assert fields == {"name": "x", "description": "one two", "argument-hint": "[a]"} and body == "Body\n"
    assert frontmatter.split("no front\n---\n") == ({}, "no front\n---\n")
    assert frontmatter.split("---\nunclosed: 1\n") == ({}, "---\nunclosed: 1\n")


def test_what_counts_as_a_command(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_DAEMON_HOME", str(tmp_path / "home"))
    (tmp_path / ".pi" / "prompts").mkdir(parents=True)
    (tmp_path / ".pi" / "prompts" / "fix.md").write_text("Fix $@")
    (tmp_path / ".pi" / "prompts" / "compact.md").write_text("shadowed")
    catalog = Catalog(tmp_path)
    assert catalog.parse("/fix the bug").text == "Fix the bug"
    assert catalog.parse("/fix").kind == "template"
    assert catalog.parse("/compact keep names").kind == "builtin"
    assert catalog.parse("/compact keep names").args == "keep names"
    for plain in ("/usr/bin/foo is broken", "hello /fix", " /fix", "/", "/ fix", "/-x"):
        assert catalog.parse(plain) .kind == "text" and catalog.parse(plain).text == plain
    assert catalog.parse("//fix it").text == "/fix it"
    with pytest.raises(UnknownCommand, match="unknown command /tmp"):
        catalog.parse("/tmp is full")
    assert any("built-in command" in p for p in catalog.problems)
