"""Shared test helpers: an event recorder and small tools for the agent core."""

from __future__ import annotations

import asyncio

from pi_daemon.converter import to_wire
from pi_daemon.tools import FunctionTool


class Recorder:
    def __init__(self, agent=None):
        self.events = []
        if agent is not None:
            agent.subscribe(self)

    def __call__(self, event):
        self.events.append(event)

    def types(self, skip_updates: bool = True) -> list[str]:
        return [e.type for e in self.events if not (skip_updates and e.type == "message_update")]

    def of(self, kind: str) -> list:
        return [e for e in self.events if e.type == kind]

    def wire(self) -> list[dict]:
        return [to_wire(e) for e in self.events]


async def wait_for(rec: Recorder, kind: str, count: int = 1, timeout: float = 2.0) -> None:
    async def poll():
        while len(rec.of(kind)) < count:
            await asyncio.sleep(0.002)

    await asyncio.wait_for(poll(), timeout)


INT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "delay": {"type": "number"}},
    "required": ["n"],
    "additionalProperties": False,
}


def sleeper(name: str = "sleep", *, sequential: bool = False, log: list | None = None):
    """A tool that sleeps ``delay`` seconds and answers ``done {n}``."""

    async def run(args, *, cancel, on_update, call_id):
        if log is not None:
            log.append(("start", args["n"]))
        await asyncio.sleep(args.get("delay", 0))
        if log is not None:
            log.append(("end", args["n"]))
        return f"done {args['n']}"

    return FunctionTool(name, "Sleeps, then answers.", INT_SCHEMA, run, sequential=sequential)


def git(cwd, *args: str) -> None:
    """Run git in ``cwd`` as a test user (no global identity needed)."""
    import os
    import subprocess

    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t"})


def git_repo(path) -> bytes:
    """Make ``path`` a git work tree with everything in it committed; its index's bytes."""
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "start")
    return (path / ".git" / "index").read_bytes()
