"""Models of an OpenAI-compatible server that models.json lists none of (``models: []``).

A local server (llama.cpp, Ollama, vLLM, LM Studio) says what it serves at
``GET {baseUrl}/models``. Each entry becomes a model; its context window is the one the
server reports where it reports one: vLLM's ``max_model_len``, ``context_length`` /
``context_window`` (OpenRouter, LM Studio and others), or llama.cpp's running context
(``/props`` ``default_generation_settings.n_ctx``, else the model's ``meta.n_ctx_train``).
Asked once when the configuration is read, and by ``probeLocalServers``, through the daemon's
one HTTP layer (:mod:`.http`, async) and with one deadline for the whole (the list and
``/props``): a server that sends its answer a byte at a time is given up at the deadline, not
kept for as long as it trickles. httpx is imported only then: reading a configuration that
asks for no discovery does not load it.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from .. import json_read
from .server_url import server_root

if TYPE_CHECKING:
    from .http import Client

DISCOVERY_TIMEOUT_S = 3.0  # each wait, and a whole discovery (a probe of many servers at once)
MAX_BODY_BYTES = 4 << 20  # a model list or /props: past this the server is not believed
DISCOVERABLE_APIS = ("openai-completions", "openai-responses")


def discoverable(config: dict[str, Any]) -> bool:
    return config.get("api") in DISCOVERABLE_APIS and bool(config.get("baseUrl"))


def _window(entry: dict[str, Any], running_ctx: int | None) -> int | None:
    for key in ("max_model_len", "context_length", "context_window", "max_context_length"):
        value = entry.get(key)
        if isinstance(value, int) and value > 0:
            return value
    meta = entry.get("meta")
    if isinstance(meta, dict):
        if running_ctx:
            return running_ctx
        trained = meta.get("n_ctx_train")
        if isinstance(trained, int) and trained > 0:
            return trained
    return None


async def _running_ctx(client: Client, base_url: str) -> int | None:
    """llama.cpp's context size as started (``-c``), which may be below what the model was trained for."""
    import httpx

    from .http import Unread

    try:
        status, body = await client.get(server_root(base_url) + "/props", limit=MAX_BODY_BYTES)
        settings = json_read.loads(body).get("default_generation_settings") if status == 200 else None
    except (httpx.HTTPError, Unread, ValueError, AttributeError):
        return None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


async def ask(config: dict[str, Any], key: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """models.json entries for what the server lists, or ``([], why)``. Each wait is bounded
    (:data:`DISCOVERY_TIMEOUT_S`), the whole is not: the caller gives it its deadline
    (``asyncio.timeout``), past which it is cancelled and its connections closed."""
    import httpx

    from .http import Unread, fresh_client
    from .model import Model

    url = config["baseUrl"].rstrip("/") + "/models"
    headers = {"authorization": f"Bearer {key}"} if key else {}
    asked = Model(id="", provider="", api=config["api"], base_url=config["baseUrl"],
                  connect_timeout=DISCOVERY_TIMEOUT_S, read_timeout=DISCOVERY_TIMEOUT_S)
    try:
        async with fresh_client(asked) as client:
            status, body = await client.get(url, limit=MAX_BODY_BYTES, headers=headers)
            if status != 200:
                return [], f"listing its models at {url} answered HTTP {status}"
            data = json_read.loads(body).get("data")
            if not isinstance(data, list):
                return [], f"listing its models at {url} gave no data list"
            listed = [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]
            running = await _running_ctx(client, config["baseUrl"]) if any("meta" in e for e in listed) else None
    except httpx.HTTPError as exc:
        return [], f"listing its models at {url} failed: {exc or type(exc).__name__}"
    except Unread as exc:  # too large, or compressed although asked uncompressed
        return [], f"listing its models: {exc}"
    except (ValueError, AttributeError):
        return [], f"listing its models at {url} did not answer JSON"
    entries = []
    for entry in listed:
        found: dict[str, Any] = {"id": entry["id"]}
        window = _window(entry, running)
        if window:
            found["contextWindow"] = window
            found["maxTokens"] = min(16_384, max(256, window // 4))
        entries.append(found)
    if not entries:
        return [], f"the server lists no models at {url}"
    return entries, None


def discover(config: dict[str, Any], key: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """:func:`ask` within :data:`DISCOVERY_TIMEOUT_S` in all, for a caller that is not async (the
    registry reading the configuration, on the event loop's thread or another): run on an event
    loop of its own, in a thread of its own."""

    async def bounded() -> tuple[list[dict[str, Any]], str | None]:
        try:
            async with asyncio.timeout(DISCOVERY_TIMEOUT_S):
                return await ask(config, key)
        except TimeoutError:
            return [], (f"listing its models at {config['baseUrl'].rstrip('/')}/models got no whole answer "
                        f"within {DISCOVERY_TIMEOUT_S:g} s")

    with ThreadPoolExecutor(1, thread_name_prefix="pi-discovery") as pool:
        return pool.submit(asyncio.run, bounded()).result()
