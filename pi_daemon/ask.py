"""``pi-daemon ask "question"``: a one-shot client of the daemon, for scripts.

It starts the daemon as a child, speaks the same JSON-RPC protocol to it, prints the
answer to stdout as it streams (tool activity and errors go to stderr) and exits with
the codes of :data:`pi_daemon.ask_codes.ASK_EXIT_CODES` (``ask --help`` and docs/scripting.md
list them). Nobody can be asked for permission here, so ``write``, ``edit`` and ``bash`` calls
are refused unless ``--allow TOOLS`` or ``--yes`` lets them run; a refusal is exit code 3. A built-in command
(``/export markdown``, ``/thinking high``, ``/new`` …) runs, and what it did is printed.

Ctrl-C aborts the run (the session keeps what was said) and exits 130; a second Ctrl-C
does not wait for the abort. When stdout's reader goes away (``| head -1``), the run is
aborted and ``ask`` ends as any Unix filter does: killed by SIGPIPE, silently.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import time
from typing import Any

from .client import Client
from .ask_codes import INTERRUPTED, MODEL_FAILED, OK, REFUSED, USAGE
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
from .guard.permissions import NOBODY_TO_ASK
from .messages import AssistantMessage, TextContent
from .wire.errors import RpcError
from .rpc.types import PromptParams, PromptResult, SessionLoadParams

ABORT_WAIT_S = 10.0  # how long Ctrl-C waits for the aborted run to settle (and be saved)


class ReaderGone(Exception):
    """stdout's reader has gone (a closed pipe)."""


def _out(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise ReaderGone from None


def _command(args: argparse.Namespace, tools: tuple[str, ...]) -> list[str]:
    command = []
    if args.model:
        command += ["--model", args.model]
    if args.workspace:
        command += ["--workspace", args.workspace]
    return command + (["--allow", ",".join(tools)] if tools else [])


def _refused_for_permission(event: ToolExecutionEnd, text: str) -> bool:
    return event.is_error and text.startswith("Tool call blocked: ") and NOBODY_TO_ASK in text


def _show(event: AgentEvent, as_json: bool, state: dict[str, Any]) -> None:
    if isinstance(event, ToolExecutionEnd) and event.is_error:
        text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
        if _refused_for_permission(event, text):
            state["refused"].setdefault(event.tool_name, None)
        if not as_json:
            print(f"[{event.tool_name} failed] {text[:500]}", file=sys.stderr)
    elif isinstance(event, MessageEnd) and isinstance(event.message, AssistantMessage):
        state["last"] = event.message
    if as_json:
        _out(json.dumps(to_wire(event)) + "\n")
    elif isinstance(event, MessageUpdate):
        delta = event.assistant_message_event
        if isinstance(delta, TextDeltaEvent):
            _out(delta.delta)
            state["printed"] = True
    elif isinstance(event, ToolExecutionStart):
        print(f"[{event.tool_name}] {json.dumps(event.args)[:200]}", file=sys.stderr)
    elif isinstance(event, AutoRetryStart):
        print(f"[retrying in {event.delay_ms} ms: {event.error_message}]", file=sys.stderr)


def _converse(pi: Client, args: argparse.Namespace, text: str, state: dict[str, Any]) -> int:
    if args.session:
        pi.request("session/load", SessionLoadParams(session_id=args.session))
    result: PromptResult = pi.request("prompt", PromptParams(text=text))
    if result.disposition == "command":
        command = result.command
        if args.json:
            _out(json.dumps(to_wire(result)) + "\n")
        elif command is not None:
            _out(f"{command.summary or '/' + command.name + ' done.'}\n")
        return OK
    state["running"] = True
    for params in pi.events():
        _show(params.event, args.json, state)
        if isinstance(params.event, AgentSettled):
            break
    else:
        print("pi-daemon ask: the daemon exited before the answer was complete", file=sys.stderr)
        return USAGE
    state["running"] = False
    if state["printed"] and not args.json:
        _out("\n")
    last: AssistantMessage | None = state["last"]
    if last is not None and last.stop_reason in ("error", "aborted"):
        print(f"pi-daemon ask: {last.error_message or last.stop_reason}", file=sys.stderr)
        return MODEL_FAILED
    if state["refused"]:
        tools = ", ".join(state["refused"])
        print(f"pi-daemon ask: refused for want of permission: {tools} (let them run with --allow "
              f"{','.join(state['refused'])}, or --yes)", file=sys.stderr)
        return REFUSED
    return OK


def _abort(pi: Client, state: dict[str, Any]) -> None:
    """Abort what runs (a run, a /compact), and wait (bounded) until a run has settled: the session
    file then says so."""
    if pi.proc.poll() is not None:
        return
    try:
        pi.request_future("abort")
    except OSError:
        return
    if not state["running"]:
        return
    end = time.monotonic() + ABORT_WAIT_S
    try:
        for params in pi.events(timeout=max(0.0, end - time.monotonic())):
            if isinstance(params.event, AgentSettled) or time.monotonic() > end:
                return
    except queue.Empty:
        return


def _close(pi: Client) -> None:
    try:
        pi.close(ABORT_WAIT_S)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pi.proc.kill()
        pi.proc.wait()


def _die_of_sigpipe() -> None:
    """End as a filter whose reader left does: by SIGPIPE (status 141 in a shell), nothing printed."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())  # the interpreter's last flush must not fail either
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGPIPE)


def run(args: argparse.Namespace, tools: tuple[str, ...]) -> int:
    """``args`` as :func:`pi_daemon.cli.parse_args` parsed them; ``tools`` run without asking."""
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C: KeyboardInterrupt wherever it waits
    try:
        text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
        pi = Client(*_command(args, tools))
    except KeyboardInterrupt:
        return INTERRUPTED
    except OSError as exc:
        print(f"pi-daemon ask: cannot start the daemon: {exc}", file=sys.stderr)
        return USAGE
    state: dict[str, Any] = {"printed": False, "last": None, "refused": {}, "running": False}
    code = INTERRUPTED
    try:
        try:
            code = _converse(pi, args, text, state)
        except KeyboardInterrupt:
            _abort(pi, state)
        except ReaderGone:
            _abort(pi, state)
            _close(pi)
            _die_of_sigpipe()
        except RpcError as exc:
            print(f"pi-daemon ask: {exc.message}", file=sys.stderr)
            code = USAGE
        except (ConnectionError, BrokenPipeError, ValueError) as exc:
            print(f"pi-daemon ask: {exc}", file=sys.stderr)
            code = USAGE
        finally:
            _close(pi)
    except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
        pi.proc.kill()
        code = INTERRUPTED
    return code
