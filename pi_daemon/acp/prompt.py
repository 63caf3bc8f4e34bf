"""ACP prompt content (``ContentBlock[]``) -> the text and images the model gets.

* ``text`` blocks are joined as they come (clients split a message around mentions).
* ``resource_link`` (a file the user mentioned) becomes ``@path`` inline: the model reads
  it with its ``read`` tool if it needs it.
* ``resource`` (embedded context: the file's text, possibly an unsaved buffer) becomes
  ``@path`` inline plus, after the message, a section with the path and the text in a
  fence longer than any backtick run inside it. A binary embedded resource that is an
  image becomes an image; any other is named but not included.
* ``image`` blocks become images. ``audio`` is refused (not advertised).

Paths are shown relative to the workspace when inside it; other URIs as they are.
A malformed block is refused with ``-32602`` naming ``params.prompt[i]``.
"""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import unquote, urlparse

from ..messages import ImageContent
from ..wire.errors import invalid_params


def shown_path(uri: str, workspace: str) -> str:
    """``file:///w/src/a.py`` -> ``src/a.py`` (inside the workspace) or ``/elsewhere/b.py``."""
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return uri
    path = unquote(parsed.path) if parsed.scheme == "file" else uri
    if os.path.isabs(path):
        rel = os.path.relpath(path, workspace)
        if not rel.startswith(".."):
            return rel
    return path


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _string(block: dict[str, Any], key: str, where: str) -> str:
    value = block.get(key)
    if not isinstance(value, str):
        raise invalid_params(f"{where}.{key}", "expected a string")
    return value


def _optional_string(block: dict[str, Any], key: str, where: str) -> str | None:
    return None if block.get(key) is None else _string(block, key, where)


def render(blocks: Any, workspace: str) -> tuple[str, list[ImageContent]]:
    """The prompt's text for the model and its images; raises an ``AcpError`` for bad content."""
    if not isinstance(blocks, list):
        raise invalid_params("params.prompt", "expected an array of content blocks")
    if not blocks:
        raise invalid_params("params.prompt", "the prompt is empty")
    text: list[str] = []
    sections: list[str] = []
    images: list[ImageContent] = []
    for n, block in enumerate(blocks):
        where = f"params.prompt[{n}]"
        if not isinstance(block, dict):
            raise invalid_params(where, "expected a content block object")
        kind = block.get("type")
        if kind == "text":
            text.append(_string(block, "text", where))
        elif kind == "image":
            data, mime = _string(block, "data", where), _string(block, "mimeType", where)
            if not mime.startswith("image/"):
                raise invalid_params(f"{where}.mimeType", f"{mime!r} is not an image type")
            images.append(ImageContent(data=data, mime_type=mime))
        elif kind == "resource_link":
            uri = _string(block, "uri", where)
            _string(block, "name", where)
            text.append(f"@{shown_path(uri, workspace)}")
        elif kind == "resource":
            resource = block.get("resource")
            if not isinstance(resource, dict):
                raise invalid_params(f"{where}.resource", "expected an object with uri and text or blob")
            uri = _string(resource, "uri", f"{where}.resource")
            path = shown_path(uri, workspace)
            text.append(f"@{path}")
            kind_of = _optional_string(resource, "mimeType", f"{where}.resource")
            if isinstance(resource.get("text"), str):
                body = resource["text"]
                fence = _fence(body)
                sections.append(f"{path}:\n{fence}\n{body}{'' if body.endswith(chr(10)) else chr(10)}{fence}")
            elif isinstance(resource.get("blob"), str):
                if kind_of and kind_of.startswith("image/"):
                    images.append(ImageContent(data=resource["blob"], mime_type=kind_of))
                else:
                    sections.append(f"{path}: (binary content{f' of type {kind_of}' if kind_of else ''}, not included)")
            else:
                raise invalid_params(f"{where}.resource", "expected text or blob")
        elif kind == "audio":
            raise invalid_params(where, "audio prompts are not supported (promptCapabilities.audio is false)")
        else:
            raise invalid_params(f"{where}.type", f"unknown content block type {kind!r} "
                                 "(expected text, image, resource or resource_link)")
    message = "".join(text)
    if sections:
        message += "\n\nContext the user attached:\n\n" + "\n\n".join(sections)
    return message, images
