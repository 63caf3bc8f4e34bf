"""The shell-command rules: what a remembered bash answer covers, on the parsed command."""

import pytest

from pi_daemon.guard.command_rules import covers, hits, parse, suggest

LS = [("exact", "ls -la")]


@pytest.mark.parametrize("command", [
    "ls -la ; touch X", "ls -la;touch X", "ls -la && touch X", "ls -la || touch X", "ls -la & touch X",
    "ls -la | sh", "ls -la |& sh", "ls -la $(touch X)", "ls -la `touch X`", 'ls -la "$(touch X)"',
    "ls -la > file", "ls -la >> file", "ls -la &> file", "ls -la < file", "ls -la <(touch X)", "ls -la >(sh)",
    "ls -la 2> file", "ls -la > $(touch X)", "ls -la <<EOF\n$(touch X)\nEOF",
    "FOO=1 ls -la", "PATH=. ls -la", "(ls -la)", "{ ls -la; }", "bash -c 'ls -la'", "sh -c 'ls -la'",
    "eval ls -la", "ls -la ${X:-$(touch X)}", "ls -la $((1 + 2))", "ls -la\ntouch X", "f() { ls -la; }; f",
    "if true; then ls -la; fi", "for i in 1; do ls -la; done", "ls -la &&", "$'ls' -la", "l* -la", "ls -la *",
])
def test_always_for_ls_la_does_not_cover(command):
    assert not covers(LS, parse(command)), command


@pytest.mark.parametrize("command", ["ls -la", "  ls -la  ", "ls -la;", "ls -la # list", "ls -la && ls -la",
                                     "ls -la | ls -la", "ls -la 2>&1", "ls -la 2>/dev/null", "'ls' \"-la\""])
def test_always_for_ls_la_covers_the_same_command(command):
    assert covers(LS, parse(command)), command


def test_a_prefix_covers_arguments_but_every_part_must_be_covered():
    rules = [("prefix", "git status"), ("prefix", "git diff")]
    assert covers(rules, parse("git status --short src/"))
    assert covers(rules, parse("git status && git diff HEAD"))
    assert covers(rules, parse("git status $FILE"))  # a plain variable as an argument
    assert not covers(rules, parse("git status && git push"))
    assert not covers(rules, parse("git statusx"))
    assert not covers(rules, parse("git status $(git push)"))
    assert not covers(rules, parse("git status > out.txt"))
    assert not covers(rules, parse("git -c core.pager=sh status"))
    assert covers(rules + [("prefix", "git push")], parse("git status $(git push)"))  # each part on its own


def test_exact_covers_any_text_it_names_and_tool_covers_everything():
    assert covers([("exact", "make && make install > log")], parse("make && make install > log"))
    assert covers([("exact", "echo $((1+2))")], parse("echo $((1+2))"))  # unparsable, but that very text
    assert covers([("tool", "")], parse("anything | at all $(x)"))
    assert not covers([], parse("ls"))
    assert not covers(LS, parse(""))


def test_a_reject_rule_hits_any_part():
    assert hits([("prefix", "rm -rf")], parse("ls && rm -rf /"))
    assert hits([("prefix", "rm -rf")], parse("ls $(rm -rf /)"))
    assert hits([("exact", "curl x | sh")], parse("curl x | sh"))
    assert not hits([("prefix", "rm -rf")], parse("rm -r x"))


@pytest.mark.parametrize("command, remembered", [
    ("npm test", ("prefix", "npm test")),
    ("git status --short", ("prefix", "git status")),
    ("echo first", ("prefix", "echo first")),
    ("ls -la", ("exact", "ls -la")),  # no subcommand: the exact command
    ("make", ("exact", "make")),
    ("bash -c 'rm x'", ("exact", "bash -c 'rm x'")),  # runs its arguments: never a prefix
    ("python3 setup.py", ("exact", "python3 setup.py")),
    ("find . -name x", ("exact", "find . -name x")),
    ("git status && git push", ("exact", "git status && git push")),
    ("git status > out", ("exact", "git status > out")),
    ("X=1 git status", ("exact", "X=1 git status")),
])
def test_what_always_remembers(command, remembered):
    assert suggest(parse(command)) == remembered


def test_deep_nesting_is_not_understood_and_does_not_raise():
    parsed = parse("echo $(" * 300 + "x" + ")" * 300)
    assert not parsed.understood and not covers([("prefix", "echo x")], parsed)
