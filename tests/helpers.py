"""Shared test helpers: an event recorder and small tools for the agent core."""

from __future__ import annotations

import asyncio

from pi_daemon.converter import to_wire
from pi_daemon.tools import FunctionTool

# How long a test waits for an outcome by default: met at once on an idle host, taken only when the
# outcome never comes, and long enough that a loaded 2-core host (a load of 10 and more) still meets it.
WAIT_S = 60.0


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


def wait_until(condition, what: str, timeout: float = WAIT_S) -> None:
    """Wait (in a thread that may block) until ``condition()`` holds; fail naming ``what``."""
    import time

    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.01)


async def await_until(condition, what: str, timeout: float = WAIT_S) -> None:
    """:func:`wait_until` on the event loop."""
    end = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < end, f"timed out after {timeout:g} s waiting for {what}"
        await asyncio.sleep(0.005)


async def wait_for(rec: Recorder, kind: str, count: int = 1, timeout: float = WAIT_S) -> None:
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


KEY = "sk-hostile-repo-test-key"
HOOKS = ("post-index-change", "pre-commit", "post-checkout", "pre-auto-gc", "reference-transaction", "post-commit")


def armed_repo(tmp_path: Path) -> tuple[Path, Path]:
    """(the workspace, the file the trap appends to each time it runs)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fired = tmp_path / "fired"
    trap = tmp_path / "trap"
    trap.write_text(f'#!/bin/sh\necho "$0 $* key=${{OPENAI_API_KEY:-none}}" >> {fired}\ncat\n')
    trap.chmod(0o755)
    (ws / "a.txt").write_text("one\n")
    (ws / "b.p").write_text("process filter\n")
    (ws / "c.inc").write_text("included filter\n")
    git_repo(ws)
    for key, value in [("filter.evil.clean", f"{trap} clean"), ("filter.evil.smudge", f"{trap} smudge"),
                       ("filter.evil.required", "true"), ("filter.proc.process", f"{trap} process"),
                       ("diff.evil.textconv", f"{trap} textconv"), ("diff.external", f"{trap} external"),
                       ("core.fsmonitor", str(trap)), ("core.pager", str(trap)),
                       ("core.hooksPath", str(tmp_path / "hooks")), ("include.path", str(tmp_path / "more.config"))]:
        git(ws, "config", key, value)
    (tmp_path / "more.config").write_text(f'[filter "inc"]\n\tclean = {trap} include\n')
    for folder in (tmp_path / "hooks", ws / ".git" / "hooks"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            (folder / hook).write_text(f"#!/bin/sh\nexec {trap} hook-{hook}\n")
            (folder / hook).chmod(0o755)
    (ws / ".gitattributes").write_text("* filter=evil diff=evil\n*.p filter=proc\n*.inc filter=inc\n")
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "attributes").write_text("* filter=evil\n")
    return ws, fired
