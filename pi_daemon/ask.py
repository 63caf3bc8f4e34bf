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
import subprocess
import sys
from typing import Any

from .cli import add_permission_args, permission_argv


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pi-daemon ask", description="Ask the agent once and print the answer.")
    parser.add_argument("text", nargs="+", help="the prompt ('-' reads it from stdin)")
    parser.add_argument("--model", help="provider/id, e.g. faux/echo")
    parser.add_argument("--workspace", help="the folder the agent works in (default: here)")
    parser.add_argument("--session", help="continue this session id instead of starting a new one")
    parser.add_argument("--json", action="store_true", help="print every event as one JSON line instead")
    add_permission_args(parser)
    return parser.parse_args(argv)


class Connection:
    def __init__(self, args: argparse.Namespace) -> None:
        command = [sys.executable, "-m", "pi_daemon"]
        if args.model:
            command += ["--model", args.model]
        if args.workspace:
            command += ["--workspace", args.workspace]
        command += permission_argv(args)
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.next_id = 0
        self.backlog: list[dict[str, Any]] = []  # events that came before a reply

    def send(self, method: str, params: dict[str, Any]) -> int:
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self.next_id

    def messages(self):
        while self.backlog:
            yield self.backlog.pop(0)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            yield json.loads(line)

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request_id = self.send(method, params)
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            if message.get("id") == request_id and "method" not in message:
                return message
            self.backlog.append(message)
        raise ConnectionError("the daemon exited without answering")


def _show(event: dict[str, Any], as_json: bool, state: dict[str, Any]) -> None:
    if as_json:
        print(json.dumps(event), flush=True)
        return
    kind = event["type"]
    if kind == "message_update":
        inner = event["assistantMessageEvent"]
        if inner["type"] == "text_delta":
            sys.stdout.write(inner["delta"])
            sys.stdout.flush()
            state["printed"] = True
    elif kind == "tool_execution_start":
        print(f"[{event['toolName']}] {json.dumps(event['args'])[:200]}", file=sys.stderr)
    elif kind == "tool_execution_end" and event["isError"]:
        text = "".join(b.get("text", "") for b in event["result"].get("content", []))
        print(f"[{event['toolName']} failed] {text[:500]}", file=sys.stderr)
    elif kind == "message_end" and event["message"].get("role") == "assistant":
        state["last"] = event["message"]
    elif kind == "auto_retry_start":
        print(f"[retrying in {event['delayMs']} ms: {event['errorMessage']}]", file=sys.stderr)


def main(argv: list[str]) -> int:
    args = parse(argv)
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    try:
        conn = Connection(args)
    except OSError as exc:
        print(f"pi-daemon ask: cannot start the daemon: {exc}", file=sys.stderr)
        return 2
    state: dict[str, Any] = {"printed": False, "last": None}

    def interrupt(signum, frame):
        conn.send("abort", {})
        state["interrupted"] = True

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        if args.session:
            loaded = conn.call("session/load", {"sessionId": args.session})
            if "error" in loaded:
                print(f"pi-daemon ask: {loaded['error']['message']}", file=sys.stderr)
                return 2
        reply = conn.call("prompt", {"text": text})
        if "error" in reply:
            print(f"pi-daemon ask: {reply['error']['message']}", file=sys.stderr)
            return 2
        for message in conn.messages():
            event = message.get("params", {}).get("event") if message.get("method") == "agent/event" else None
            if event is None:
                continue
            _show(event, args.json, state)
            if event["type"] == "agent_settled":
                break
        else:
            print("pi-daemon ask: the daemon exited before the answer was complete", file=sys.stderr)
            return 2
    except (ConnectionError, BrokenPipeError, ValueError) as exc:
        print(f"pi-daemon ask: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGINT, previous)
        if conn.proc.stdin:
            try:
                conn.proc.stdin.close()
            except BrokenPipeError:
                pass
        conn.proc.wait(10)
    if state.get("printed") and not args.json:
        print()
    if state.get("interrupted"):
        return 130
    last = state.get("last") or {}
    if last.get("stopReason") in ("error", "aborted"):
        print(f"pi-daemon ask: {last.get('errorMessage') or last.get('stopReason')}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
