"""Helpers for process tests: scripted bash calls of the agent, and a /proc scan for leftovers."""

from __future__ import annotations

import json
import os
import random
import socket
import time
from typing import Any, Callable
from pathlib import Path

from client import WAIT_S, text, write_script


def unique_seconds() -> str:
    """A sleep duration no other process uses: its command line marks the test's processes."""
    return f"{random.randint(1000, 9999)}.{os.getpid()}{random.randint(100, 999)}"


def bash_call(command: str, call_id: str = "b", **extra) -> dict:
    return {"content": [{"type": "toolCall", "id": call_id, "name": "bash",
                         "arguments": {"command": command, **extra}}], "stopReason": "toolUse"}


def script(tmp_path: Path, *replies: dict) -> str:
    return str(write_script(tmp_path / "script.json", [*replies, text("done")], modelId="s"))


def home_with(tmp_path: Path, settings: dict) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "settings.json").write_text(json.dumps(settings))
    return str(home)


def alive(marker: str) -> list[int]:
    """Live (not zombie) ``sleep`` processes whose command line contains ``marker``."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline.startswith("sleep ") and marker in cmdline and state != b"Z":
            found.append(int(pid))
    return found


def wait_gone(marker: str, timeout: float = WAIT_S) -> list[int]:
    deadline = time.monotonic() + timeout
    while (left := alive(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def wait_alive(marker: str, count: int = 1, timeout: float = WAIT_S) -> list[int]:
    deadline = time.monotonic() + timeout
    while len(found := alive(marker)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def tool_ends(d) -> list[dict]:
    return [e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def poll(check: Callable[[], Any], timeout: float) -> bool:
    """Whether ``check()`` came true within ``timeout`` seconds (asked every 20 ms)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
