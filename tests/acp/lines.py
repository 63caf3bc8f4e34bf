"""A daemon over NDJSON pipes, read line by line as a conformance kit reads it: what came
before an answer came before it on the wire."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from client import clean_env


class Lines:
    """A daemon over NDJSON pipes: send a frame, wait for the answer with that id or the
    notification a predicate picks."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "pi_daemon", *args], cwd=cwd, env=env or clean_env(),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.log: list[dict[str, Any]] = []  # every message read, in the order it came
        self.ids = iter(range(1, 1_000_000))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            message = json.loads(line)
            self.log.append(message)
            self.inbox.put(message)

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params: Any) -> int:
        request_id = next(self.ids)
        self.send_raw(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()
                      + b"\n")
        return request_id

    def notify(self, method: str, params: Any) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", "method": method, "params": params}).encode() + b"\n")

    def updates(self, session_id: str, messages: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The ``session/update`` payloads for a session among ``messages`` (default: all read)."""
        return [m["params"]["update"] for m in (self.log if messages is None else messages)
                if m.get("method") == "session/update" and m["params"].get("sessionId") == session_id]

    def wait(self, pick: Any, timeout: float = 30.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        for message in self.seen:
            if pick(message):
                self.seen.remove(message)
                return message
        while True:
            message = self.inbox.get(timeout=max(0.01, end - time.monotonic()))
            if pick(message):
                return message
            self.seen.append(message)

    def answer(self, request_id: int) -> dict[str, Any]:
        return self.wait(lambda m: m.get("id") == request_id and "method" not in m)

    def request(self, method: str, params: Any) -> dict[str, Any]:
        return self.answer(self.send(method, params))

    def code(self, method: str, params: Any) -> int:
        reply = self.request(method, params)
        assert "error" in reply, reply
        return int(reply["error"]["code"])

    def close(self) -> bytes:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read()
