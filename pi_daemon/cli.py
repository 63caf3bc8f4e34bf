"""``pi-daemon``: serve the agent over JSON-RPC on stdio.

Start-up is ordered for a fast first answer: the protocol's file descriptors are taken
and the reader started at once; if the client's first message is ``initialize`` it is
answered before the models are read and before the rest of the daemon is loaded. The
default model's provider (and its HTTP transport) is loaded next, before the first prompt arrives rather
than after it. pygls, whose import is the largest of all, is not on this path at all: it
is loaded in the background once the daemon is idle (see :mod:`.rpc.early`).
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
from typing import TYPE_CHECKING

from . import __version__
from .json_types import JsonObject

if TYPE_CHECKING:
    from .acp.initialize import AcpClient
    from .llm.model import Model
    from .llm.registry import ModelRegistry
    from .rpc.initialize import ClientState
    from .rpc.transport import FrameReader, FrameWriter

DEFAULT_MAX_FRAME = 64 * 1024 * 1024


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pi-daemon",
        description="A coding-agent daemon speaking JSON-RPC 2.0 on stdin/stdout "
        "(newline-delimited JSON or Content-Length framing, chosen by the client's first byte). "
        "'pi-daemon ask TEXT' asks once and prints the answer.",
    )
    parser.add_argument("--version", action="version", version=f"pi-daemon {__version__}")
    parser.add_argument("--model", metavar="PROVIDER/ID",
                        help="default model of new sessions, e.g. faux/echo (offline) or anthropic/claude-sonnet-4-5")
    parser.add_argument("--workspace", metavar="DIR", default=None,
                        help="the workspace the agent works in (default: the current directory)")
    parser.add_argument("--log-level", default=os.environ.get("PI_DAEMON_LOG_LEVEL", "warning"),
                        choices=["debug", "info", "warning", "error"], help="stderr log level (default: warning)")
    parser.add_argument("--log-file", metavar="PATH", help="also write the log to this file")
    parser.add_argument("--max-frame-bytes", type=int, default=DEFAULT_MAX_FRAME, metavar="N",
                        help="largest accepted frame; larger ones get an error (default: 64 MiB)")
    parser.add_argument("--faux-script", metavar="FILE", default=os.environ.get("PI_DAEMON_FAUX_SCRIPT"),
                        help="a JSON script of replies for the offline faux provider (model faux/<modelId>)")
    add_permission_args(parser)
    parser.add_argument("--permission-timeout", type=_seconds, metavar="SECONDS", default=None,
                        help="refuse a tool call whose permission request is unanswered this long "
                        "(default: settings permissions.timeoutSeconds, else 300)")
    parser.add_argument("--acp", action="store_true",
                        help="speak the Agent Client Protocol (ACP v1, newline-delimited JSON) instead of the "
                        "native protocol: for Zed, JetBrains IDEs, CodeCompanion.nvim and avante.nvim")
    parser.add_argument("--trust-workspace", action="store_true",
                        help="trust the workspace's own configuration (.pi/settings.json, .pi/models.json) "
                        "for this run, without asking and without remembering it")
    return parser.parse_args(argv)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def add_permission_args(parser: argparse.ArgumentParser) -> None:
    """``--allow`` / ``--yes``: the tools that may run without asking (shared with ``pi-daemon ask``)."""
    parser.add_argument("--allow", action="append", default=[], metavar="TOOLS",
                        help="comma-separated tools (write, edit, bash) that run without asking; without "
                        "this, and without a client that can ask, they are refused")
    parser.add_argument("--yes", action="store_true", help="the same as --allow write,edit,bash")


def allowed_tools(args: argparse.Namespace) -> tuple[str, ...]:
    names = [n.strip() for value in args.allow for n in value.split(",") if n.strip()]
    if args.yes:
        names += ["write", "edit", "bash"]
    return tuple(dict.fromkeys(names))


def permission_argv(args: argparse.Namespace) -> list[str]:
    """The ``--allow`` option that passes the same tools on to a daemon."""
    tools = allowed_tools(args)
    return ["--allow", ",".join(tools)] if tools else []


def setup_logging(level: str, log_file: str | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level.upper(), handlers=handlers,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pygls logs every message body at INFO and its own tracebacks for expected errors.
    logging.getLogger("pygls").setLevel(logging.WARNING if level == "debug" else logging.CRITICAL)


def _leading_initialize(items: list[object]) -> JsonObject | None:
    """The first frame read, when it is a well-formed ``initialize`` request; else None
    (the server then answers it, errors included)."""
    from .rpc.incoming import Refused, message_object, valid_id
    from .rpc.transport import EOF

    first = items[0]
    if first is EOF or not isinstance(first, bytes):
        return None
    try:
        data = message_object(first)
    except Refused:
        return None
    if not (data.get("method") == "initialize" and data.get("jsonrpc") == "2.0"
            and data.get("id") is not None and valid_id(data["id"])):
        return None
    return data


def _fast_initialize(items: list[object], writer: FrameWriter, reader: FrameReader, client: ClientState,
                     max_frame: int, workspace: str) -> list[object]:
    """Answer a leading ``initialize`` now; returns the items still to be dispatched."""
    from .rpc.framing import encode

    data = _leading_initialize(items)
    if data is None:
        return items
    from .converter import to_wire
    from .rpc.errors import RpcError
    from .rpc.initialize import initialize
    from .rpc.initialize_types import InitializeParams
    from .rpc.params import structure_params

    try:
        params = structure_params(data.get("params"), InitializeParams)
        reply = {"jsonrpc": "2.0", "id": data["id"],
                 "result": to_wire(initialize(params, client, max_frame, workspace))}
    except RpcError as exc:
        reply = {"jsonrpc": "2.0", "id": data["id"], "error": {"code": exc.code, "message": exc.message}}
    writer.write(encode(json.dumps(reply, separators=(",", ":")).encode(), reader.framing))
    return items[1:]


def _fast_acp_initialize(items: list[object], writer: FrameWriter, reader: FrameReader, client: AcpClient,
                         registry: ModelRegistry) -> list[object]:
    """ACP's ``initialize``, answered before the rest of the ACP face is imported."""
    from .rpc.framing import encode

    data = _leading_initialize(items)
    params = data.get("params") if data is not None else None
    if data is None or not isinstance(params, dict):  # the connection gives the error reply
        return items
    from .acp.initialize import InitError, initialize

    try:
        reply = {"jsonrpc": "2.0", "id": data["id"], "result": initialize(params, client, registry)}
    except InitError as exc:
        reply = {"jsonrpc": "2.0", "id": data["id"], "error": {"code": exc.code, "message": exc.message}}
    writer.write(encode(json.dumps(reply, separators=(",", ":")).encode(), reader.framing))
    return items[1:]


def _load_models(workspace: str, args: argparse.Namespace) -> tuple[ModelRegistry, Model | None] | None:
    """The model registry and the default model; None (and the reason logged) when the
    configuration or ``--model`` cannot be used."""
    from .llm.registry import ModelRegistry, ModelUnavailable

    try:
        registry = ModelRegistry.load(workspace, faux_script=args.faux_script)
        default_model = registry.resolve(args.model) if args.model else registry.first_usable()
    except (ModelUnavailable, OSError, ValueError) as exc:
        logging.getLogger("pi_daemon").error("pi-daemon: %s", exc)
        return None
    return registry, default_model


def settle_heap() -> None:
    """Start-up's objects (classes, modules, the catalog) live as long as the process: moved
    out of the collector's reach, a full collection no longer walks them all, and the first
    one no longer falls on the first prompt. Collection was off while they were built."""
    gc.freeze()
    gc.enable()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    gc.disable()  # start-up builds long-lived objects only; see settle_heap
    from . import procs

    procs.start_keeper()  # first, before any thread: whatever the daemon starts dies with it
    if argv[:1] == ["ask"]:
        from .ask import main as ask

        gc.enable()
        return ask(argv[1:])
    args = parse_args(argv)
    from .rpc.transport import FrameReader, FrameWriter, take_over_stdio

    in_fd, out_fd = take_over_stdio()
    setup_logging(args.log_level, args.log_file)
    log = logging.getLogger("pi_daemon")
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        log.error("workspace %s is not a directory", workspace)
        return 2

    if args.trust_workspace:
        from . import trust

        trust.trust_for_this_run(workspace)

    writer = FrameWriter(out_fd)
    reader = FrameReader(in_fd, args.max_frame_bytes, writer)
    reader.start()

    early = None
    if args.acp or os.isatty(in_fd):  # at a terminal nobody waits for initialize: a bad configuration is said at once
        early = _load_models(workspace, args)
        if early is None:
            return 2

    if args.acp:
        assert early is not None
        registry, default_model = early
        from .acp.initialize import AcpClient

        acp_client = AcpClient()
        pending = _fast_acp_initialize(reader.next_items(), writer, reader, acp_client, registry)
        from .acp.server import serve as serve_acp

        settle_heap()
        code = serve_acp(reader, writer, workspace=workspace, registry=registry, default_model=default_model,
                         client=acp_client, pending=pending, allowed_tools=allowed_tools(args),
                         permission_timeout=args.permission_timeout, workspace_given=args.workspace is not None,
                         faux_script=args.faux_script, model=args.model, trust_workspace=args.trust_workspace)
        writer.flush()
        logging.shutdown()
        os._exit(code)

    from .rpc.initialize import ClientState

    client = ClientState()
    pending = _fast_initialize(reader.next_items(), writer, reader, client, args.max_frame_bytes, workspace)
    # The models are read once initialize is answered: the catalog, models.json's shape
    # check (jsonschema) and the providers are not needed for that answer.
    loaded = early or _load_models(workspace, args)
    if loaded is None:
        writer.flush()
        os._exit(2)
    registry, default_model = loaded

    from .rpc.server import serve

    if default_model is not None:
        # The first prompt needs it anyway: loaded now, it is ready when the user has typed one.
        from .llm.stream import load_provider

        load_provider(default_model.api)
    settle_heap()
    code = serve(reader, writer, workspace=workspace, registry=registry, default_model=default_model,
                 max_frame_bytes=args.max_frame_bytes, client=client, pending=pending,
                 allowed_tools=allowed_tools(args), permission_timeout=args.permission_timeout)
    writer.flush()
    logging.shutdown()
    # The reader thread may still be blocked in read(); a normal interpreter exit would abort.
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
