"""Models of an OpenAI-compatible server that models.json lists none of (``models: []``).

A local server (llama.cpp, Ollama, vLLM, LM Studio) says what it serves at
``GET {baseUrl}/models``. Each entry becomes a model; its context window is the one the
server reports where it reports one: vLLM's ``max_model_len``, ``context_length`` /
``context_window`` (OpenRouter, LM Studio and others), or llama.cpp's running context
(``/props`` ``default_generation_settings.n_ctx``, else the model's ``meta.n_ctx_train``).
Asked once when the configuration is read, with a short time limit. httpx is imported
only then: reading a configuration that asks for no discovery does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import json_read
from .server_url import server_root

if TYPE_CHECKING:
    import httpx

DISCOVERY_TIMEOUT_S = 3.0
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


def _running_ctx(client: httpx.Client, base_url: str) -> int | None:
    """llama.cpp's context size as started (``-c``), which may be below what the model was trained for."""
    import httpx

    try:
        status, body = _get(client, server_root(base_url) + "/props")
        settings = json_read.loads(body).get("default_generation_settings") if status == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
    return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


class BodyTooLarge(ValueError):
    pass


def _get(client: httpx.Client, url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """The status and body of a GET, asked uncompressed and read a piece at a time: ValueError past
    :data:`MAX_BODY_BYTES` (an endless body), or for a compressed one (a small one can expand
    without end, all at once)."""
    with client.stream("GET", url, headers={**(headers or {}), "accept-encoding": "identity"}) as response:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise BodyTooLarge(f"the server at {url} compressed its answer (content-encoding: {encoding}) although "
                               "asked for it uncompressed")
        body = bytearray()
        for data in response.iter_bytes():
            body += data
            if len(body) > MAX_BODY_BYTES:
                raise BodyTooLarge(f"the server at {url} answered with more than {MAX_BODY_BYTES >> 20} MiB")
        return response.status_code, bytes(body)


def discover(config: dict[str, Any], key: str | None = None) -> tuple[list[dict[str, Any]], str | None]:
    """models.json entries for what the server lists, or ``([], why)``."""
    import httpx

    url = config["baseUrl"].rstrip("/") + "/models"
    headers = {"authorization": f"Bearer {key}"} if key else {}
    try:
        with httpx.Client(timeout=DISCOVERY_TIMEOUT_S) as client:
            status, body = _get(client, url, headers)
            if status != 200:
                return [], f"listing its models at {url} answered HTTP {status}"
            data = json_read.loads(body).get("data")
            if not isinstance(data, list):
                return [], f"listing its models at {url} gave no data list"
            listed = [e for e in data if isinstance(e, dict) and isinstance(e.get("id"), str) and e["id"]]
            running = _running_ctx(client, config["baseUrl"]) if any("meta" in e for e in listed) else None
    except httpx.HTTPError as exc:
        return [], f"listing its models at {url} failed: {exc or type(exc).__name__}"
    except BodyTooLarge as exc:
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
