"""A provider's answer, the local server's ``/props`` probe included, is read without importing
httpx: its import (with idna, email, urllib.request, http.cookiejar) was a sixth of the CPU from
the daemon's start to its first streamed text. Run in a fresh interpreter, as the daemon runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from loopback import Reply, openai_text

PROMPT = """
import asyncio, json, logging, sys
from pi_daemon.cancel import CancelToken
from pi_daemon.llm.model import Context, Model, StreamOptions, ToolSpec
from pi_daemon.llm.stream import stream
from pi_daemon.messages import UserMessage

warnings = []
logging.getLogger("pi_daemon.llm.local_server").addHandler(
    type("H", (logging.Handler,), {"emit": lambda self, record: warnings.append(record.getMessage())})())

async def main():
    model = Model(id="m", provider="local", api="openai-completions", base_url=sys.argv[1] + "/v1")
    context = Context(messages=[UserMessage(content="hi")],
                      tools=[ToolSpec(name="read", description="Read a file", parameters={"type": "object"})])
    events = [e async for e in stream(model, context, StreamOptions(api_key="k"), CancelToken())]
    return events[-1].message.text()

text = asyncio.run(main())
print(json.dumps({"text": text, "warned": len(warnings), "loaded": sorted(
    name for name, module in sys.modules.items()  # httpx._main is None: pi_daemon.llm blocks it
    if module is not None and name.split(".")[0] in ("httpx", "httpx_sse", "httpcore", "idna"))}))
"""


def test_a_streamed_answer_and_the_props_probe_do_not_import_httpx(server) -> None:
    server.routes["/props"] = Reply(body=json.dumps({"chat_template_caps": {"supports_tools": False}}).encode(),
                                    content_type="application/json")
    server.script(Reply(body=openai_text("hello there")))
    env_proxyless = {k: v for k, v in os.environ.items()
                     if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    done = subprocess.run([sys.executable, "-P", "-c", PROMPT, server.url], capture_output=True, text=True,
                          timeout=60, env=env_proxyless)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {"text": "hello there", "warned": 1, "loaded": []}
    assert [hit.path for hit in server.route_hits] == ["/props"]


def test_retry_after_as_an_http_date_or_seconds() -> None:
    import email.utils
    import time

    from pi_daemon.llm.errors import parse_retry_after

    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < parse_retry_after({"retry-after": later}) <= 31  # type: ignore[operator]
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"retry-after": "soon"}) is None
