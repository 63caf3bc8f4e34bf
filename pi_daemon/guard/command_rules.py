"""What a remembered ``bash`` answer covers, decided on the parsed command.

A command is parsed with a real shell parser (bashlex) into the simple commands it would
run — every part of a list (``;``, ``&&``, ``||``, ``&``) or pipeline, and every command
or process substitution inside a word — and the redirections it makes. An allow rule
covers a command only when it covers every one of those simple commands and nothing
else is there. Whatever the parser fails on or this module does not model (subshells,
groups, loops, functions, arithmetic, variable assignments, parameter expansions that
are more than a name, redirections to a file, here-documents) makes the command *not
understood*: then only a rule for that exact command text, or for the whole tool,
covers it, and otherwise the user is asked.

Rules for ``bash`` have a scope:

* ``exact`` — ``pattern`` is a command text; it covers that very text, and each simple
  command of a compound command whose words are exactly the pattern's words;
* ``prefix`` — ``pattern`` is the leading words (program and subcommand, ``git status``);
  it covers a simple command whose first words are those, whatever arguments follow;
* ``tool`` — every command.
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, TypeAlias

import attrs

# Programs that run their arguments (or code given in them) as commands: a prefix of
# such a command would cover anything, so "always" for them remembers the exact text.
RUNS_ITS_ARGUMENTS = frozenset({
    "bash", "sh", "zsh", "dash", "ksh", "fish", "eval", "exec", "env", "command", "builtin", "source", ".",
    "sudo", "doas", "su", "xargs", "nohup", "nice", "ionice", "timeout", "time", "watch", "setsid", "stdbuf",
    "chroot", "unshare", "nsenter", "strace", "ltrace", "script", "find", "parallel", "busybox",
    "python", "python3", "node", "perl", "ruby", "php", "lua", "awk", "gawk", "sed", "ssh",
})

_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9._:+-]*\Z")
_PLAIN_PARAMETER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])\Z")
# A word whose source has one of these is not taken literally (globs, braces, tildes, expansions).
_NOT_LITERAL = re.compile(r"[$`{}*?\[\]~]")
_HARMLESS_TARGETS = frozenset({"/dev/null"})


@attrs.frozen
class SimpleCommand:
    words: tuple[str | None, ...]  # None: a word that expands to something only the shell knows
    redirects: bool = False  # reads or writes a file through a redirection

    def starts_with(self, prefix: tuple[str, ...]) -> bool:
        return not self.redirects and len(self.words) >= len(prefix) and self.words[:len(prefix)] == prefix

    def is_exactly(self, words: tuple[str, ...]) -> bool:
        return not self.redirects and self.words == words


@attrs.frozen
class ParsedCommand:
    text: str
    commands: tuple[SimpleCommand, ...] = ()
    problem: str | None = None  # why the command is not understood; None when it is

    @property
    def understood(self) -> bool:
        return self.problem is None and bool(self.commands)


class _NotUnderstood(Exception):
    pass


def parse(command: str) -> ParsedCommand:
    text = command.strip()
    if not text:
        return ParsedCommand(text, problem="the command is empty")
    import bashlex  # loading its parser tables takes ~0.15 s: only when a command is checked

    try:
        trees = bashlex.parse(text)
    except Exception as exc:  # noqa: BLE001 - bashlex raises many kinds; any failure means "ask"
        return ParsedCommand(text, problem=f"the shell parser could not read it ({type(exc).__name__})")
    found: list[SimpleCommand] = []
    try:
        _check_gaps(text, trees)
        for tree in trees:
            _walk(tree, text, found)
    except _NotUnderstood as exc:
        return ParsedCommand(text, tuple(found), problem=str(exc))
    except RecursionError:
        return ParsedCommand(text, tuple(found), problem="it nests too deeply")
    return ParsedCommand(text, tuple(found))


_Node: TypeAlias = Any  # a bashlex.ast.node: bashlex ships no types


def _check_gaps(text: str, trees: list[_Node]) -> None:
    """Text the parser left out may only be blanks and comments (else it misread something)."""
    end = 0
    for tree in [*trees, None]:
        start = tree.pos[0] if tree is not None else len(text)
        for line in text[end:start].splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and stripped not in (";", "&"):
                raise _NotUnderstood(f"part of it was not parsed: {stripped[:40]!r}")
        if tree is not None:
            end = tree.pos[1]


def _walk(node: _Node, text: str, found: list[SimpleCommand]) -> None:
    kind = node.kind
    if kind in ("list", "pipeline"):
        for part in node.parts:
            if part.kind not in ("operator", "pipe"):
                _walk(part, text, found)
    elif kind == "command":
        found.append(_simple(node, text, found))
    elif kind in ("operator", "pipe"):
        return
    else:
        raise _NotUnderstood(f"it uses a {kind} construct")


def _simple(node: _Node, text: str, found: list[SimpleCommand]) -> SimpleCommand:
    words: list[str | None] = []
    redirects = False
    for part in node.parts:
        if part.kind == "word":
            words.append(_word(part, text, found))
        elif part.kind == "redirect":
            redirects = _redirect(part, text, found) or redirects
        elif part.kind == "assignment":
            raise _NotUnderstood("it sets variables for the command")
        else:
            raise _NotUnderstood(f"it uses a {part.kind} construct")
    return SimpleCommand(tuple(words), redirects)


def _word(node: _Node, text: str, found: list[SimpleCommand]) -> str | None:
    """The word bash would pass, or None when it expands; substitutions join ``found``."""
    for part in getattr(node, "parts", ()):
        if part.kind in ("commandsubstitution", "processsubstitution"):
            _walk(part.command, text, found)
        elif part.kind == "parameter":
            if not _PLAIN_PARAMETER.match(getattr(part, "value", "") or ""):
                raise _NotUnderstood("it uses a parameter expansion that is more than a name")
        elif part.kind != "tilde":
            raise _NotUnderstood(f"it uses a {part.kind} construct")
    source = text[node.pos[0]:node.pos[1]]
    if getattr(node, "parts", None) or _NOT_LITERAL.search(source):
        return None
    word: str = node.word
    return word


def _redirect(node: _Node, text: str, found: list[SimpleCommand]) -> bool:
    """True when the redirection reads or writes a file (duplicating a descriptor does not)."""
    if getattr(node, "heredoc", None) is not None:
        return True
    target = node.output
    if isinstance(target, int):
        return False
    if getattr(target, "kind", None) == "word":
        word = _word(target, text, found)
        if node.type in (">&", "<&") and word is not None and (word.isdigit() or word == "-"):
            return False
        return word not in _HARMLESS_TARGETS
    raise _NotUnderstood("it uses a redirection this parser does not model")


# --- rules ---------------------------------------------------------------------------


def _pattern_words(pattern: str) -> tuple[str, ...] | None:
    parsed = parse(pattern)
    if not parsed.understood or len(parsed.commands) != 1 or parsed.commands[0].redirects:
        return None
    words = parsed.commands[0].words
    return None if any(w is None for w in words) else words  # type: ignore[return-value]


def covers_part(scope: str, pattern: str, part: SimpleCommand) -> bool:
    words = _pattern_words(pattern)
    if words is None:
        return False
    return part.starts_with(words) if scope == "prefix" else part.is_exactly(words)


def covers(rules: Iterable[tuple[str, str]], parsed: ParsedCommand) -> bool:
    """Do ``(scope, pattern)`` allow rules cover the whole command?"""
    rules = list(rules)
    if any(scope == "tool" for scope, _ in rules):
        return True
    if any(scope == "exact" and pattern.strip() == parsed.text for scope, pattern in rules):
        return True
    if not parsed.understood:
        return False
    return all(any(covers_part(scope, pattern, part) for scope, pattern in rules) for part in parsed.commands)


def hits(rules: Iterable[tuple[str, str]], parsed: ParsedCommand) -> bool:
    """Does any ``(scope, pattern)`` reject rule match the command or any part of it?"""
    for scope, pattern in rules:
        if scope == "tool" or (scope == "exact" and pattern.strip() == parsed.text):
            return True
        if any(covers_part(scope, pattern, part) for part in parsed.commands):
            return True
    return False


def suggest(parsed: ParsedCommand) -> tuple[str, str]:
    """What "always" remembers for this command: ``(scope, pattern)``."""
    if parsed.understood and len(parsed.commands) == 1:
        part = parsed.commands[0]
        words = part.words
        if (not part.redirects and len(words) >= 2 and words[0] is not None and words[1] is not None
                and os.path.basename(words[0]) not in RUNS_ITS_ARGUMENTS and _SUBCOMMAND.match(words[1])):
            prefix = f"{words[0]} {words[1]}"
            if _pattern_words(prefix) == (words[0], words[1]):
                return "prefix", prefix
    return "exact", parsed.text
