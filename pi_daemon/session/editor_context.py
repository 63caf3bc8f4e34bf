"""Editor context in a prompt: selections, buffers and mentioned files, rendered for the model.

A prompt (or steer / follow-up) may carry ``context: [{path, range?, text?}]``. Each item
is rendered after the user's text, in the form the ``read`` tool uses, so the model sees
the path, the line numbers and the lines::

    <user text>

    [editor context]
    src/app.py lines 3-4:
         3	def main():
         4	    return 1

``text`` given: those lines, numbered from the range's first line (unnumbered without a
range). No ``text``: the file is read through the session's file access (the editor's
buffer when the client offers it, else the disk) — the range's lines, or the whole
file up to :data:`MAX_LINES`. Ranges are LSP ranges (0-based lines; an end at character
0 of a later line ends the line before). The rendered text is part of the stored
message.
"""

from __future__ import annotations

from typing import Any

MAX_LINES = 2000
MAX_CHARS = 100_000


def _lines(rng: Any) -> tuple[int, int] | None:
    """1-based first and last line of an LSP range."""
    if rng is None:
        return None
    first, last = rng.start.line, rng.end.line
    if rng.end.character == 0 and last > first:
        last -= 1
    return first + 1, max(first, last) + 1


async def render(items: list[Any], files: Any) -> str:
    """The ``[editor context]`` block for ``items`` (objects with ``path``, ``range``, ``text``)."""
    parts = ["[editor context]"]
    for item in items:
        span = _lines(item.range)
        if item.text is not None:
            body, first = item.text, span[0] if span else None
        else:
            data, target = await files.current(item.path)
            if data is None:
                raise FileNotFoundError(f"{item.path!r} does not exist")
            lines = data.decode("utf-8", "replace").splitlines()
            first = span[0] if span else 1
            last = span[1] if span else min(len(lines), MAX_LINES)
            body = "\n".join(lines[first - 1:last])
        shown = item.path
        text_lines = body.splitlines() or [""]
        if first is None:
            parts.append(f"{shown}:")
            parts.extend(text_lines)
        else:
            end = first + len(text_lines) - 1
            parts.append(f"{shown} line {first}:" if end == first else f"{shown} lines {first}-{end}:")
            parts.extend(f"{n:>6}\t{line}" for n, line in enumerate(text_lines, first))
    block = "\n".join(parts)
    if len(block) > MAX_CHARS:
        block = block[:MAX_CHARS] + "\n[editor context cut at 100000 characters]"
    return block
