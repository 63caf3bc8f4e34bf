"""The tests' client of the real daemon over pipes (both framings): :mod:`pi_daemon.client` with its frames kept."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import frame_check

from pi_daemon.client import Client, Framing

ROOT = Path(__file__).resolve().parents[2]
# How long a wait for a reply or an event lasts by default: met at once on an idle host, taken only when
# it never comes, and long enough that a loaded 2-core host (a load of 10 and more) still meets it.
WAIT_S = 60.0


KEY_VARS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY")


def user_models_dir(workspace: str | Path) -> Path:
    """The user's own models folder (``PI_CODING_AGENT_DIR``, where a Pi user keeps
    ``models.json``) of the daemons a test starts in ``workspace``; beside it, never in it."""
    workspace = Path(workspace)
    return workspace.parent / f"{workspace.name}.pi-agent"


def user_models(workspace: str | Path, config: dict) -> str:
    """``config`` as the user's own ``models.json`` for daemons started in ``workspace``, whatever
    their ``PI_DAEMON_HOME`` (a provider only the workspace's ``.pi/models.json`` defines waits
    for the user's trust)."""
    folder = user_models_dir(workspace)
    folder.mkdir(exist_ok=True)
    (folder / "models.json").write_text(json.dumps(config))
    return str(workspace)


def clean_env(home: str | None = None, cwd: str | None = None, **extra: str) -> dict[str, str]:
    """The daemon's environment in tests: no real API keys, no user configuration (but the
    models :func:`user_models` gave a daemon in ``cwd``)."""
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env["PI_DAEMON_HOME"] = home or tempfile.mkdtemp(prefix="pi-daemon-home-")
    models = user_models_dir(cwd) if cwd else None
    env["PI_CODING_AGENT_DIR"] = str(models) if models and models.is_dir() else \
        os.path.join(env["PI_DAEMON_HOME"], "no-pi-agent")  # not the user's Pi files
    env.update(extra)
    return env


def write_script(path: Path, replies: list[dict], **options: Any) -> Path:
    path.write_text(json.dumps({"replies": replies, **options}))
    return path


def text(t: str) -> dict:
    return {"content": [{"type": "text", "text": t}]}


class Daemon(Client):
    """:class:`pi_daemon.client.Client` for tests: frames kept as dicts, waited for, and
    every one recorded for the schema check (:mod:`frame_check`)."""

    def __init__(self, *args: str, framing: Framing = "ndjson", cwd: str | None = None,
                 env: dict | None = None, cmd: list[str] | None = None) -> None:
        self.framing = framing
        self.responses: dict[Any, dict] = {}
        self.response_counts: dict[Any, int] = {}
        self.events: list[dict] = []  # agent/event params as received (the tests read this list, not events())
        self.other: list[dict] = []
        self.raw_stdout = bytearray()
        self.server_requests: list[dict] = []
        self.on_request: dict = {}  # method -> params -> result (None: answer later with respond)
        self.stderr = bytearray()
        self.frames = frame_check.Connection()  # every frame is checked against the schema
        self._cond = threading.Condition()
        super().__init__(*args, cwd=cwd, env=clean_env(cwd=cwd, **(env or {})), framing=framing,
                         stderr=subprocess.PIPE, command=cmd)
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()

    # --- wire ----------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        self.write(data)

    def frame(self, body: bytes) -> bytes:
        return self._wire.encode(body)

    def sent(self, message: dict) -> None:
        self.frames.client_sent(message)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            with self._cond:
                self.stderr += line
                self._cond.notify_all()

    def output_ended(self) -> None:
        self.frames.finished = True

    def received(self, frame: bytes, message: Any) -> None:
        self.raw_stdout += frame
        self.frames.daemon_sent(message)
        with self._cond:
            if "id" in message and "method" in message:  # a request from the daemon
                self.server_requests.append(message)
                handler = self.on_request.get(message["method"])
                if handler is not None:
                    result = handler(message["params"])
                    if result is not None:
                        self.respond(message["id"], result)
            elif "id" in message and "method" not in message:
                self.responses[message["id"]] = message
                self.response_counts[message["id"]] = self.response_counts.get(message["id"], 0) + 1
            elif message.get("method") == "agent/event":
                self.events.append(message["params"])
            else:
                self.other.append(message)
            self._cond.notify_all()

    # --- requests ------------------------------------------------------------------

    def request_async(self, method: str, params: Any = None, *, omit_params: bool = False) -> Any:
        message = self.next_request(method, params)
        if omit_params:
            del message["params"]
        self.send(message)
        return message["id"]

    def wait_response(self, request_id: Any, timeout: float = WAIT_S) -> dict:
        return self._wait(lambda: self.responses.get(request_id), timeout, f"response {request_id}")

    def request(self, method: str, params: Any = None, **kw) -> dict:
        return self.wait_response(self.request_async(method, params, **kw))

    def call(self, method: str, params: Any = None) -> Any:
        response = self.request(method, params)
        assert "result" in response, response
        return response["result"]

    def respond(self, request_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def wait_stderr(self, text: bytes, timeout: float = WAIT_S) -> bytes:
        """Until the daemon's log holds ``text`` (it is read by its own thread, after the replies)."""
        return self._wait(lambda: text if text in self.stderr else None, timeout, f"{text!r} on stderr")

    def wait_server_request(self, method: str, count: int = 1, timeout: float = WAIT_S) -> dict:
        def found():
            matching = [r for r in self.server_requests if r["method"] == method]
            return matching[count - 1] if len(matching) >= count else None
        return self._wait(found, timeout, f"{count}x {method} request")

    # --- events --------------------------------------------------------------------

    def _wait(self, predicate, timeout: float, what: str):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = predicate()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"timed out waiting for {what}; stderr: {self.stderr.decode()[-2000:]}")
                self._cond.wait(left)

    def wait_event(self, kind: str, count: int = 1, session_id: str | None = None, timeout: float = WAIT_S) -> dict:
        def found():
            matching = [e for e in self.events if e["event"]["type"] == kind
                        and (session_id is None or e["sessionId"] == session_id)]
            return matching[count - 1] if len(matching) >= count else None
        return self._wait(found, timeout, f"{count}x {kind}")

    def wait_for(self, predicate, what: str, timeout: float = WAIT_S) -> dict:
        """Until an event (the whole notification's params) satisfies ``predicate``."""
        def found():
            return next((e for e in self.events if predicate(e["event"])), None)
        return self._wait(found, timeout, what)

    def event_types(self, session_id: str | None = None, skip_updates: bool = True) -> list[str]:
        with self._cond:
            return [e["event"]["type"] for e in self.events
                    if (session_id is None or e["sessionId"] == session_id)
                    and not (skip_updates and e["event"]["type"] == "message_update")]

    def texts(self) -> str:
        with self._cond:
            return "".join(e["event"]["assistantMessageEvent"].get("delta", "") for e in self.events
                           if e["event"]["type"] == "message_update"
                           and e["event"]["assistantMessageEvent"]["type"] == "text_delta")

    # --- end -----------------------------------------------------------------------

    def close(self, timeout: float = WAIT_S) -> int:
        return super().close(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr_reader.join(5)
