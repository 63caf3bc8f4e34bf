"""The YAML frontmatter of Markdown command files (templates, ``SKILL.md``): a small, safe subset.

Only ``key: value`` lines are read (values may be quoted; an indented line continues
the value before it; ``>`` / ``|`` introduce an indented block). Anything else in the
block is ignored: these files come from repositories, so nothing in them is evaluated.
"""

from __future__ import annotations

import re

_KEY = re.compile(r"([A-Za-z][\w-]*)\s*:\s*(.*)\Z")


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        inner = value[1:-1]
        return inner.replace('\\"', '"') if value[0] == '"' else inner.replace("''", "'")
    return value


def split(text: str) -> tuple[dict[str, str], str]:
    """``(fields, body)``; a file without frontmatter has no fields."""
    text = text.lstrip("\ufeff")
    if not text.startswith("---"):
        return {}, text
    lines = text.split("\n")
    if lines[0].strip() != "---":
        return {}, text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return {}, text
    fields: dict[str, str] = {}
    key = None
    for line in lines[1:end]:
        match = _KEY.match(line)
        if match and not line[:1].isspace():
            key, value = match.group(1), match.group(2)
            fields[key] = "" if value.strip() in (">", "|", ">-", "|-") else _unquote(value)
        elif key is not None and line.strip():
            fields[key] = (fields[key] + " " + line.strip()).strip()
    return fields, "\n".join(lines[end + 1:]).lstrip("\n")
