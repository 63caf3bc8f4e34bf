"""``pi-daemon ask "question"``: a one-shot client of the daemon, for scripts.

It starts the daemon as a child, speaks the same JSON-RPC protocol to it, prints the
answer to stdout as it streams (tool activity and errors go to stderr) and exits with
the codes below. Nobody can be asked for permission here, so ``write``, ``edit`` and
``bash`` calls are refused unless ``--allow TOOLS`` or ``--yes`` lets them run.

  0  the agent answered           1  the model request failed (the error is on stderr)
  2  bad usage or the daemon      130  interrupted (Ctrl-C aborts the run first)
     could not start or answer
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Any

from .client import Client
from .converter import to_wire
from .events import (
    AgentEvent,
    AgentSettled,
    AutoRetryStart,
    MessageEnd,
    MessageUpdate,
    TextDeltaEvent,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from .messages import AssistantMessage, TextContent
from .wire.errors import RpcError
from .rpc.types import PromptParams, SessionLoadParams


def _command(args: argparse.Namespace, tools: tuple[str, ...]) -> list[str]:
    command = []
    if args.model:
        command += ["--model", args.model]
    if args.workspace:
        command += ["--workspace", args.workspace]
    return command + (["--allow", ",".join(tools)] if tools else [])


def _show(event: AgentEvent, as_json: bool, state: dict[str, Any]) -> None:
    if as_json:
        print(json.dumps(to_wire(event)), flush=True)
        return
    if isinstance(event, MessageUpdate):
        delta = event.assistant_message_event
        if isinstance(delta, TextDeltaEvent):
            sys.stdout.write(delta.delta)
            sys.stdout.flush()
            state["printed"] = True
    elif isinstance(event, ToolExecutionStart):
        print(f"[{event.tool_name}] {json.dumps(event.args)[:200]}", file=sys.stderr)
    elif isinstance(event, ToolExecutionEnd) and event.is_error:
        text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
        print(f"[{event.tool_name} failed] {text[:500]}", file=sys.stderr)
    elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
        state["last"] = event.message
    elif isinstance(event, AutoRetryStart):
        print(f"[retrying in {event.delay_ms} ms: {event.error_message}]", file=sys.stderr)


def run(args: argparse.Namespace, tools: tuple[str, ...]) -> int:
    """``args`` as :func:`pi_daemon.cli.parse_args` parsed them; ``tools`` run without asking."""
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    try:
        pi = Client(*_command(args, tools))
    except OSError as exc:
        print(f"pi-daemon ask: cannot start the daemon: {exc}", file=sys.stderr)
        return 2
    state: dict[str, Any] = {"printed": False, "last": None}

    def interrupt(signum: int, frame: object) -> None:
        pi.request_future("abort")
        state["interrupted"] = True

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        if args.session:
            pi.request("session/load", SessionLoadParams(session_id=args.session))
        pi.request("prompt", PromptParams(text=text))
        for params in pi.events():
            _show(params.event, args.json, state)
            if isinstance(params.event, AgentSettled):
                break
        else:
            print("pi-daemon ask: the daemon exited before the answer was complete", file=sys.stderr)
            return 2
    except RpcError as exc:
        print(f"pi-daemon ask: {exc.message}", file=sys.stderr)
        return 2
    except (ConnectionError, BrokenPipeError, ValueError) as exc:
        print(f"pi-daemon ask: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGINT, previous)
        pi.close()
    if state.get("printed") and not args.json:
        print()
    if state.get("interrupted"):
        return 130
    last: AssistantMessage | None = state.get("last")
    if last is not None and last.stop_reason in ("error", "aborted"):
        print(f"pi-daemon ask: {last.error_message or last.stop_reason}", file=sys.stderr)
        return 1
    return 0
