"""ACP ``initialize``, ``authenticate`` and ``logout``: versions, capabilities, and the keys the daemon reads.

The auth methods are the built-in providers whose keys come from the environment. ``logout``
makes the daemon forget those keys (it removes them from its own environment, so its tools
do not see them either) until it is restarted with them set.
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from .. import __version__
from ..llm.catalog import PROVIDERS
from ..wire.errors import AuthRequired, InvalidParams, InvalidRequest

PROTOCOL_VERSION = 1
@attrs.define
class AcpClient:
    """What the client said about itself in ``initialize``."""
    initialized: bool = False
    name: str | None = None
    read_text_file: bool = False
    write_text_file: bool = False
    terminal: bool = False
    boolean_options: bool = False  # takes ``type: "boolean"`` configuration options


def auth_methods(registry: Any) -> list[dict[str, Any]]:
    """One method per built-in provider whose key comes from the environment and that has models here."""
    providers = {m.provider for m in registry.models()}
    return [{"id": name, "name": f"{name} API key",
             "description": f"pi-daemon reads the key from the environment variable {env}"}
            for name, (_, _, env) in PROVIDERS.items() if name in providers]


def authenticate(registry: Any, params: dict[str, Any]) -> dict[str, Any]:
    method = params.get("methodId")
    if not isinstance(method, str):
        raise InvalidParams("invalid params: params.methodId: expected a string")
    if method not in PROVIDERS:
        known = ", ".join(m["id"] for m in auth_methods(registry)) or "none"
        raise InvalidParams(f"invalid params: params.methodId: unknown method {method!r} (known: {known})")
    env = PROVIDERS[method][2]
    if not os.environ.get(env):
        raise AuthRequired(f"{env} is not set in the environment pi-daemon was started with: set it "
                                       "in the agent server's environment (e.g. Zed's agent_servers.<name>.env) "
                                       "and restart the agent")
    models = [m for m in registry.models() if m.provider == method]
    problems = [reason for m in models for ok, reason in [registry.availability(m)] if not ok]
    if models and len(problems) == len(models):
        raise AuthRequired(f"{env} is set but cannot be used: {problems[0]}")
    return {}


def initialize(params: dict[str, Any], client: AcpClient, registry: Any) -> dict[str, Any]:
    if client.initialized:
        raise InvalidRequest("initialize was already received on this connection")
    version = params.get("protocolVersion")
    if type(version) is not int:
        raise InvalidParams("invalid params: params.protocolVersion: expected an integer")
    capabilities = params.get("clientCapabilities") or {}
    if not isinstance(capabilities, dict):
        raise InvalidParams("invalid params: params.clientCapabilities: expected an object")
    fs = capabilities.get("fs") or {}
    info = params.get("clientInfo") or {}
    client.initialized = True
    client.name = info.get("name") if isinstance(info, dict) else None
    client.read_text_file = isinstance(fs, dict) and fs.get("readTextFile") is True
    client.write_text_file = isinstance(fs, dict) and fs.get("writeTextFile") is True
    client.terminal = capabilities.get("terminal") is True
    session = capabilities.get("session")
    options = session.get("configOptions") if isinstance(session, dict) else None
    client.boolean_options = isinstance(options, dict) and isinstance(options.get("boolean"), dict)
    methods = auth_methods(registry)
    # A client asking for another version gets ours; it disconnects if it cannot speak it.
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": True,
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": False},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}, "delete": {}, "additionalDirectories": {}},
            **({"auth": {"logout": {}}} if methods else {}),
        },
        "authMethods": methods,
        "agentInfo": {"name": "pi-daemon", "title": "pi-daemon", "version": __version__},
    }


def logout(registry: Any) -> dict[str, Any]:
    """Forget the keys of the advertised auth methods for the rest of this run."""
    for method in auth_methods(registry):
        os.environ.pop(PROVIDERS[method["id"]][2], None)
    return {}
