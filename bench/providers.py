"""Provider performance: a 20,000-delta answer from a loopback OpenAI-compatible server.

Measures (median of --runs):
  * through the daemon: prompt -> agent_settled, the client reading every notification;
  * the provider layer alone, in-process: microseconds per delta, next to the bare
    httpx + SSE parsing of the same stream as the baseline measured in the same run.

Run: .venv/bin/python bench/providers.py [--runs 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import precompile

from pi_daemon.client import Client
from pi_daemon.events import AgentSettled, MessageUpdate, TextDeltaEvent
from pi_daemon.rpc.types import PromptParams

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "llm"))
from loopback import LoopbackServer, Reply, openai_chunk, openai_sse  # noqa: E402

DELTAS = 20_000


def answer_body(deltas: int) -> bytes:
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": "x"}) for _ in range(deltas)]
    chunks.append(openai_chunk({}, "stop"))
    return openai_sse(chunks)


def through_daemon(server: LoopbackServer, body: bytes, workspace: str, deltas: int) -> float:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PI_DAEMON_HOME"] = workspace
    with Client("--model", "local/bench", cwd=workspace, env=env, stderr=subprocess.DEVNULL) as pi:
        pi.request("getState")
        server.script(Reply(body=body, piece=1 << 16))
        started = time.perf_counter()
        pi.request_future("prompt", PromptParams(text="go"))
        seen = 0
        for params in pi.events():
            event = params.event
            if isinstance(event, MessageUpdate) and isinstance(event.assistant_message_event, TextDeltaEvent):
                seen += len(event.assistant_message_event.delta)  # deltas may be coalesced
            if isinstance(event, AgentSettled):
                break
        elapsed = time.perf_counter() - started
        assert seen == deltas, seen
        return elapsed


async def provider_alone(server: LoopbackServer, body: bytes, deltas: int) -> tuple[float, float]:
    import httpx
    from httpx_sse import EventSource

    from pi_daemon.cancel import CancelToken
    from pi_daemon.llm.model import Context, Model, StreamOptions
    from pi_daemon.llm.stream import stream
    from pi_daemon.messages import UserMessage

    model = Model(id="bench", provider="local", api="openai-completions", base_url=server.url + "/v1")
    server.script(Reply(body=body, piece=1 << 16))
    started = time.perf_counter()
    count = 0
    async for event in stream(model, Context(messages=[UserMessage(content="go")]), StreamOptions(), CancelToken()):
        count += event.type == "text_delta"
    provider = time.perf_counter() - started
    assert count == deltas, count
    server.script(Reply(body=body, piece=1 << 16))
    async with httpx.AsyncClient() as client:
        started = time.perf_counter()
        async with client.stream("POST", server.url + "/v1/chat/completions", content=b"{}") as response:
            async for sse in EventSource(response).aiter_sse():
                if sse.data != "[DONE]":
                    json.loads(sse.data)
        baseline = time.perf_counter() - started
    return provider, baseline


def main() -> None:
    precompile()
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    server = LoopbackServer()
    body = answer_body(DELTAS)
    with tempfile.TemporaryDirectory() as workspace:
        Path(workspace, ".pi").mkdir()
        Path(workspace, ".pi", "models.json").write_text(json.dumps({"providers": {"local": {
            "baseUrl": server.url + "/v1", "api": "openai-completions", "models": [{"id": "bench"}]}}}))
        daemon = [through_daemon(server, body, workspace, DELTAS) for _ in range(args.runs)]
    alone = [asyncio.run(provider_alone(server, body, DELTAS)) for _ in range(args.runs)]
    server.close()
    provider_us = [p / DELTAS * 1e6 for p, _ in alone]
    baseline_us = [b / DELTAS * 1e6 for _, b in alone]
    overhead_us = [p - b for p, b in zip(provider_us, baseline_us)]
    med = statistics.median
    print(f"{'measure':<58} {'median':>9} {'min':>9} {'max':>9} {'target':>8}")
    print(f"{f'{DELTAS:,}-delta answer via daemon, prompt -> agent_settled':<58} {med(daemon):>8.3f}s "
          f"{min(daemon):>8.3f}s {max(daemon):>8.3f}s {0.45:>7.2f}s  {'yes' if med(daemon) <= 0.45 else 'NO'}")
    print(f"{'provider layer alone, per delta':<58} {med(provider_us):>7.2f}us {min(provider_us):>7.2f}us "
          f"{max(provider_us):>7.2f}us")
    print(f"{'baseline: bare httpx + SSE parse + json.loads, per delta':<58} {med(baseline_us):>7.2f}us "
          f"{min(baseline_us):>7.2f}us {max(baseline_us):>7.2f}us")
    print(f"{'provider overhead over the baseline, per delta':<58} {med(overhead_us):>7.2f}us "
          f"(ratio {med(provider_us) / med(baseline_us):.2f}x)")
    print(f"(median of {args.runs} runs)")


if __name__ == "__main__":
    main()
