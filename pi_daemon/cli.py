"""``pi-daemon``: serve the agent over JSON-RPC on stdio (``--acp``: the Agent Client Protocol);
``pi-daemon ask TEXT``: ask once and print the answer.

The protocol's file descriptors are taken and the reader started at once, so frames the
client sends while the models are read wait in the pipe, not in a lost buffer. The default
model's provider is made ready once ``initialize`` is answered (see :meth:`.host.host.Host.prepare`).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from . import __version__
from .ask_codes import ASK_EXIT_CODES, INTERRUPTED

# Not typing's: ``attach`` runs this module, and its start-up is its figure (typing, logging
# are imported where they are used). Type checkers take the name for true all the same.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from .llm.model import Model
    from .llm.registry import ModelRegistry

DEFAULT_MAX_FRAME = 64 * 1024 * 1024


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="pi-daemon",
        description="A coding-agent daemon speaking JSON-RPC 2.0 on stdin/stdout "
        "(newline-delimited JSON or Content-Length framing, chosen by the client's first byte). "
        "'pi-daemon ask TEXT' asks once and prints the answer; 'pi-daemon serve' serves the workspace "
        "on a Unix socket that 'pi-daemon attach' bridges stdin/stdout to.",
    )
    commands = parser.add_subparsers(dest="command", metavar="{ask,serve,attach,ps}")
    ask = commands.add_parser("ask", help="ask the agent once and print the answer",
                              description="Ask the agent once and print the answer (or run a built-in "
                              "command such as '/export markdown' and print what it did).",
                              epilog=ASK_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ask.add_argument("text", nargs="+", help="the prompt ('-' reads it from stdin)")
    ask.add_argument("--model", help="provider/id, e.g. faux/echo")
    ask.add_argument("--workspace", help="the folder the agent works in (default: here)")
    ask.add_argument("--session", help="continue this session id instead of starting a new one")
    ask.add_argument("--json", action="store_true", help="print every event as one JSON line instead")
    add_permission_args(ask)
    for name, (summary, description) in SERVER_COMMANDS.items():
        add_server_args(commands.add_parser(name, help=summary, description=description))
    ps = commands.add_parser("ps", help="list this user's running servers",
                             description="List this user's running servers: workspace, pid, sessions, "
                             "connections, socket.")
    ps.add_argument("--json", action="store_true", help="print them as JSON")
    parser.add_argument("--version", action="version", version=f"pi-daemon {__version__}")
    add_daemon_args(parser)
    parser.add_argument("--acp", action="store_true",
                        help="speak the Agent Client Protocol (ACP v1, newline-delimited JSON) instead of the "
                        "native protocol: for Zed, JetBrains IDEs, CodeCompanion.nvim and avante.nvim")
    return parser.parse_args(argv)


SERVER_COMMANDS = {
    "serve": ("serve the workspace on a Unix socket, for any number of clients",
              "Serve the workspace (the native protocol) on a Unix socket in the runtime folder, one server "
              "per workspace, until it has had no connection and no run for the idle timeout."),
    "attach": ("bridge stdin/stdout to the workspace's server, starting it when none runs",
               "Bridge stdin/stdout to the workspace's server (started, with these options, when none runs): "
               "what an editor or 'ssh host pi-daemon attach --workspace W' runs in place of the daemon."),
}


def add_server_args(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve`` and ``attach``."""
    add_daemon_args(parser)
    parser.add_argument("--idle-timeout", type=_seconds, metavar="SECONDS", default=None,
                        help="stop after this long with no connection and no run "
                        "(default: settings server.idleTimeoutSeconds, else 600)")


def parse_attach_args(argv: list[str]) -> argparse.Namespace:
    """``attach``'s arguments, without building the other commands' parsers (its start-up is its figure)."""
    description = SERVER_COMMANDS["attach"][1]
    parser = argparse.ArgumentParser(prog="pi-daemon attach", description=description)
    add_server_args(parser)
    return parser.parse_args(argv, argparse.Namespace(command="attach"))


def add_daemon_args(parser: argparse.ArgumentParser) -> None:
    """The options of the daemon itself (plain, ``serve`` and ``attach``)."""
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
    parser.add_argument("--trust-workspace", action="store_true",
                        help="trust the workspace's own configuration (.pi/settings.json, .pi/models.json) "
                        "for this run, without asking and without remembering it")


def serve_options(args: argparse.Namespace) -> list[str]:
    """The options ``attach`` passes to the server it starts, and the server records in its info
    file (``attach`` compares them): those that differ from the defaults, paths made absolute."""
    options: list[str] = []
    for flag, value in (("--model", args.model), ("--faux-script", args.faux_script),
                        ("--log-file", args.log_file), ("--permission-timeout", args.permission_timeout),
                        ("--idle-timeout", args.idle_timeout)):
        if value is not None:
            is_path = flag in ("--faux-script", "--log-file")
            options += [flag, os.path.abspath(value) if is_path else f"{value:g}" if isinstance(value, float)
                        else str(value)]
    if args.log_level != "warning":
        options += ["--log-level", args.log_level]
    if args.max_frame_bytes != DEFAULT_MAX_FRAME:
        options += ["--max-frame-bytes", str(args.max_frame_bytes)]
    tools = allowed_tools(args)
    if tools:
        options += ["--allow", ",".join(tools)]
    if args.trust_workspace:
        options.append("--trust-workspace")
    return options


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


def setup_logging(level: str, log_file: str | None) -> None:
    import logging

    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        handlers.append(logging.FileHandler(log_file, encoding="utf-8"))
    logging.basicConfig(
        level=level.upper(), handlers=handlers,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _load_models(workspace: str, args: argparse.Namespace) -> tuple[ModelRegistry, Model | None] | None:
    """The model registry and the default model; None (and the reason logged) when the
    configuration or ``--model`` cannot be used."""
    import logging

    from .llm.registry import ModelRegistry, ModelUnavailable

    try:
        registry = ModelRegistry.load(workspace, faux_script=args.faux_script)
        default_model = registry.default(args.model)
    except (ModelUnavailable, OSError, ValueError) as exc:
        logging.getLogger("pi_daemon").error("pi-daemon: %s", exc)
        return None
    return registry, default_model


def settle_heap() -> None:
    """Start-up's objects (classes, modules, the catalog) live as long as the process: moved
    out of the collector's reach, a full collection no longer walks them all, and the first
    one no longer falls on the first prompt. Collection was off while they were built: on
    stdio, until the face's host (ACP: its agent) is made, after ``initialize`` is answered."""
    gc.freeze()
    gc.enable()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["attach"]:  # neither starts a process or keeps a heap: neither is the daemon
        return _attach(parse_attach_args(argv[1:]))
    if argv[:1] == ["ps"]:
        return _ps(parse_args(argv))
    gc.disable()  # start-up builds long-lived objects only; see settle_heap
    from . import procs

    procs.start_keeper()  # first, before any thread: whatever the daemon starts dies with it
    args = parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    if args.command == "ask":
        gc.enable()
        try:
            from .ask import run as ask

            return ask(args, allowed_tools(args))
        except KeyboardInterrupt:  # Ctrl-C before ask had started its daemon
            return INTERRUPTED
    import logging

    from .wire.transport import FrameReader, FrameWriter, take_over_stdio

    in_fd, out_fd = take_over_stdio()
    setup_logging(args.log_level, args.log_file)
    log = logging.getLogger("pi_daemon")
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        log.error("workspace %s is not a directory", workspace)
        return 2

    if args.trust_workspace:
        from .guard import trust

        trust.trust_for_this_run(workspace)

    writer = FrameWriter(out_fd)
    reader = FrameReader(in_fd, args.max_frame_bytes, writer)
    reader.start()
    loaded = _load_models(workspace, args)
    if loaded is None:
        writer.flush()
        os._exit(2)
    registry, default_model = loaded

    if args.acp:
        from .acp.server import serve as serve_acp

        code = serve_acp(reader, writer, workspace=workspace, registry=registry, default_model=default_model,
                         allowed_tools=allowed_tools(args), permission_timeout=args.permission_timeout,
                         workspace_given=args.workspace is not None, faux_script=args.faux_script,
                         model=args.model, trust_workspace=args.trust_workspace, settle=settle_heap)
    else:
        from .rpc.hub import serve

        code = serve(reader, writer, workspace=workspace, registry=registry, default_model=default_model,
                     max_frame_bytes=args.max_frame_bytes, allowed_tools=allowed_tools(args),
                     permission_timeout=args.permission_timeout, settle=settle_heap)
    writer.flush()
    logging.shutdown()
    # The reader thread may still be blocked in read(); a normal interpreter exit would abort.
    os._exit(code)


def _workspace(args: argparse.Namespace) -> str | None:
    workspace = os.path.abspath(args.workspace or os.getcwd())
    if not os.path.isdir(workspace):
        print(f"pi-daemon {args.command}: workspace {workspace} is not a directory", file=sys.stderr)
        return None
    return workspace


def _attach(args: argparse.Namespace) -> int:
    from .server.attach import run

    workspace = _workspace(args)
    code = 2 if workspace is None else run(workspace, serve_options(args))
    os._exit(code)  # the stdin thread may still be blocked in read()


def _ps(args: argparse.Namespace) -> int:
    from .server.ps import main as ps

    return ps(args.json)


def _serve(args: argparse.Namespace) -> int:
    import logging

    from .server import serve

    setup_logging(args.log_level, args.log_file)
    workspace = _workspace(args)
    if workspace is None:
        return 2
    started = serve.start(workspace, serve_options(args))
    if isinstance(started, int):
        return started
    if args.trust_workspace:
        from .guard import trust

        trust.trust_for_this_run(workspace)
    loaded = _load_models(workspace, args)
    if loaded is None:
        started.abandon()
        return 2
    registry, default_model = loaded
    settle_heap()
    code = serve.run(started, idle_timeout=serve.idle_timeout(args.idle_timeout), registry=registry,
                     default_model=default_model, max_frame_bytes=args.max_frame_bytes,
                     allowed_tools=allowed_tools(args), permission_timeout=args.permission_timeout)
    logging.shutdown()
    os._exit(code)  # reader threads of connections may still be blocked in read()


if __name__ == "__main__":
    sys.exit(main())
