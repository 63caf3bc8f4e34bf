"""Prompt templates: ``*.md`` files whose name is a command; ``/name args`` becomes their text.

From ``$PI_DAEMON_HOME/prompts/`` and ``<workspace>/.pi/prompts/`` (direct children
only). Frontmatter ``description`` (else the first non-empty line) and
``argument-hint`` describe the command. Placeholders: ``$1`` … , ``$@`` and
``$ARGUMENTS`` (all arguments), ``${1:-default}``, ``${@:-default}``, ``${@:N}`` and
``${@:N:L}`` (arguments from position N, L of them). A template without any
placeholder gets the arguments appended after a blank line. Arguments are split like
a shell does, only simpler: a quote opens quoting only at the start of an argument,
an unclosed quote is text, and inside quotes ``\\"`` is a quote.
"""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from . import frontmatter
from .files import Folder, collect, inside, read_text

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
MAX_BYTES = 256 * 1024
_PLACEHOLDER = re.compile(
    r"\$\{@:(\d+)(?::(\d+))?\}"     # ${@:N} / ${@:N:L}
    r"|\$\{(\d+|@):-([^}]*)\}"       # ${1:-default} / ${@:-default}
    r"|\$(\d+)"                      # $1
    r"|\$(@|ARGUMENTS)\b|\$@"        # $@ / $ARGUMENTS
)


@attrs.frozen
class Template:
    name: str
    description: str
    argument_hint: str | None
    body: str
    file: str
    source: str  # "home" or "workspace"


def read(path: Path, source: str, root: Path) -> Template | str:
    """The template in ``path`` (read beneath ``root``), or the reason it cannot be used."""
    name = path.stem
    if not NAME.match(name):
        return f"{path}: {name!r} is not a command name (letters, digits, '_', '.', '-')"
    try:
        text = read_text(path, root, MAX_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        return f"{path}: cannot be read ({exc})"
    fields, body = frontmatter.split(text)
    first_line = next((line.strip() for line in body.splitlines() if line.strip()), "")
    return Template(name=name, description=fields.get("description") or first_line[:120],
                    argument_hint=fields.get("argument-hint") or None, body=body.strip("\n"), file=str(path),
                    source=source)


def split_args(text: str) -> list[str]:
    args: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        quote = text[i] if text[i] in "\"'" else None
        if quote:
            j, out = i + 1, []
            while j < n and text[j] != quote:
                if text[j] == "\\" and j + 1 < n and text[j + 1] == quote:
                    j += 1
                out.append(text[j])
                j += 1
            if j < n:  # closed: one argument
                args.append("".join(out))
                i = j + 1
                continue
        j = i
        while j < n and not text[j].isspace():
            j += 1
        args.append(text[i:j])
        i = j
    return args


def expand(body: str, args: list[str]) -> str:
    used = False

    def one(match: re.Match[str]) -> str:
        nonlocal used
        used = True
        start, length, ref, default, index, _ = match.groups()
        if start is not None:
            begin = max(int(start) - 1, 0)
            chosen = args[begin:begin + int(length)] if length is not None else args[begin:]
            return " ".join(chosen)
        if ref is not None:
            value = " ".join(args) if ref == "@" else (args[int(ref) - 1] if 0 < int(ref) <= len(args) else "")
            return value or default
        if index is not None:
            return args[int(index) - 1] if 0 < int(index) <= len(args) else ""
        return " ".join(args)

    text = _PLACEHOLDER.sub(one, body)
    if not used and args:
        text = f"{text}\n\n{' '.join(args)}"
    return text


def template_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.md"))


def load(folders: list[Folder]) -> tuple[list[Template], list[str]]:
    """Templates of the folders in order (an earlier one wins a name); and the problems."""
    return collect(folders, template_files, inside, read, lambda t: f"/{t.name}")
