"""What a local OpenAI-compatible server says about itself: llama.cpp's ``/props``.

llama.cpp's ``llama-server`` drops the ``tools`` of a request without a word when its chat
template cannot render them (started without ``--jinja``, or with a template that has no
tool support even with it); the model then never calls a tool. ``/props`` reports this as
``chat_template_caps.supports_tools``: once per server on this machine or the local network,
the daemon asks (through the model's own client) and logs a warning. It asks beside the
requests, never before them: the answer only decides a warning, and the first prompt's first
delta does not wait for a second round trip. For the default model it asks while the daemon
waits for the first prompt (:meth:`..host.host.Host.prepare`), which also readies the client's
HTTP stack (the first request's imports and connection) in that idle time.
"""

from __future__ import annotations

import asyncio
import logging

import httpx

from .. import json_read
from .http import Client, Unread
from .model import Model
from .server_url import is_local, server_root

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 2.0
_probed: set[str] = set()
_asking: set[asyncio.Task[None]] = set()  # the probes under way (a task is only weakly kept by the loop)


def tools_warning(base_url: str, props: object) -> str | None:
    """The warning for a ``/props`` answer whose chat template cannot take tools, or None."""
    if not isinstance(props, dict):
        return None
    caps = props.get("chat_template_caps")
    if not isinstance(caps, dict) or caps.get("supports_tools") is not False:
        return None
    return (f"the model server at {base_url} reports that its chat template has no tool support "
            "(/props chat_template_caps.supports_tools is false): it drops the tools from every request, "
            "so the model cannot call any. Start llama-server with --jinja and a chat template that renders "
            "tools (--chat-template-file, or a model whose built-in template does); see docs/models.md")


def check_tool_support(model: Model, client: Client) -> None:
    """Start asking a local server's ``/props``, once per base URL; a warning is logged when
    tools would be dropped."""
    if model.base_url in _probed or not is_local(model.base_url):
        return
    _probed.add(model.base_url)
    task = asyncio.ensure_future(_ask_props(model, client))
    _asking.add(task)
    task.add_done_callback(_asking.discard)


async def _ask_props(model: Model, client: Client) -> None:
    try:
        status, body = await client.get(server_root(model.base_url) + "/props", timeout=PROBE_TIMEOUT_S)
        props = json_read.loads(body) if status == 200 else None
    except Unread as exc:
        log.warning("%s; its tool support is not known", exc)
        return
    except (httpx.HTTPError, ValueError):
        return  # not llama.cpp, or it does not say: nothing to warn about
    warning = tools_warning(model.base_url, props)
    if warning:
        log.warning("%s", warning)
