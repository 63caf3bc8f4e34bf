"""Spawn -> first text delta of the first prompt, as an editor does it: start the daemon and
at once send ``initialize`` and a prompt, against a loopback OpenAI-compatible streaming
server (the one of ``bench/peers.py``, in its own process).

Per run: the wall time from spawn to the first text delta, and the daemon's CPU (user +
system, its threads included) up to that moment, read from ``/proc``; the wall time from spawn
to the answer to ``initialize`` (sent back to back with the prompt, as an editor may) and the
daemon's CPU up to then; with ``--idle``, also
its CPU over two seconds of idling that start three seconds after the answer settled. Prints medians of ``--runs``.

``--editor`` sends the ``initialize`` the editor clients send (VS Code's and Neovim's: they
declare permissions, workspace trust, questions, the editor's files and every language feature),
which is what a user meets. ``--ready`` measures instead the first prompt once the daemon is
ready, as ``bench/peers.py``'s second row does: ``initialize`` answered, then ``getState``, half a
second of typing, and from the prompt to its first text delta (wall, and the daemon's CPU in
that time).

``--against REV`` measures the daemon of a git revision too (checked out into a temporary
work tree, its bytecode written as for this tree), interleaved run by run
with this tree's, so both see the same machine load.

Run: .venv/bin/python bench/first_token.py [--runs 20] [--against HEAD~1] [--idle] [--editor] [--ready]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import precompile
from peers import Daemon, ModelServer

from pi_daemon.client import Client
from pi_daemon.rpc.initialize_types import ClientCapabilities, FsCapabilities, InitializeParams, LanguageFeatures

REPO = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
EDITOR = InitializeParams(protocol_version=1, capabilities=ClientCapabilities(  # as editor-clients/*/ send it
    permissions=True, workspace_trust=True, ask_user=True,
    fs=FsCapabilities(read_text_file=True, apply_edit=True, save=True),
    language_features=LanguageFeatures(diagnostics=True, definition=True, references=True, document_symbols=True,
                                       workspace_symbols=True, hover=True, status=True)))


def cpu_seconds(pid: int) -> float:
    """User + system CPU of the process (all its threads) so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def checkout(rev: str, into: Path) -> Path:
    """``rev``'s package in ``into``, compiled as an installed daemon's would be."""
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(into), rev], check=True)
    compileall.compile_dir(str(into / "pi_daemon"), quiet=1)
    if (into / "pi_daemon" / "attrs_cache.py").exists():  # a revision that still cached attrs' methods
        subprocess.run([sys.executable, "-m", "pi_daemon.attrs_cache"], check=True, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(into)}, cwd=into)
    return into


def one_run(server: ModelServer, env: dict, workspace: Path, idle: bool, editor: bool,
            ready: bool) -> dict[str, float]:
    server.script({"text": 3})
    spawned = time.perf_counter()
    client = Client(cwd=str(workspace), env=env, stderr=subprocess.DEVNULL,
                    command=[sys.executable, "-P", "-m", "pi_daemon", "--model", "local/bench"])
    pid = client.proc.pid
    figures: dict[str, float] = {}
    answered = client.request_future("initialize", EDITOR if editor else InitializeParams(protocol_version=1))
    if not ready:
        answered.add_done_callback(lambda _: figures.update({"initialize": time.perf_counter() - spawned,
                                                             "initialize cpu": cpu_seconds(pid)}))
    cpu_before = 0.0
    if ready:
        answered.result()
        client.request("getState")
        time.sleep(0.5)  # the user types
        spawned, cpu_before = time.perf_counter(), cpu_seconds(pid)
    client.request_future("prompt", {"text": "hello"})
    for params in client.events():
        event = params.event
        if "wall" not in figures and event.type == "message_update" and \
                event.assistant_message_event.type == "text_delta":
            figures["wall"] = time.perf_counter() - spawned
            figures["cpu"] = cpu_seconds(pid) - cpu_before
        elif event.type == "agent_settled":
            break
    if idle:
        time.sleep(3)
        before = cpu_seconds(pid)
        time.sleep(2)
        figures["idle cpu"] = cpu_seconds(pid) - before
    client.close(20)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--against", metavar="REV", help="also measure this git revision's daemon, interleaved")
    parser.add_argument("--idle", action="store_true", help="also the CPU of 2 s of idling after the answer")
    parser.add_argument("--editor", action="store_true", help="initialize as the editor clients do")
    parser.add_argument("--ready", action="store_true", help="prompt -> first delta once the daemon is ready")
    args = parser.parse_args()
    precompile()
    server = ModelServer()
    figures: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="pi-first-token-") as tmp:
        root = Path(tmp)
        (root / "home").mkdir()
        workspace = root / "workspace"
        workspace.mkdir()
        env = Daemon.setup(root, server)
        envs = {"this tree": {k: v for k, v in env.items() if k != "PYTHONPATH"}}
        if args.against:
            tree = checkout(args.against, root / "against")
            envs[args.against] = {**envs["this tree"], "PYTHONPATH": str(tree)}
        try:
            for _ in range(args.runs):
                for name, daemon_env in envs.items():
                    run = one_run(server, daemon_env, workspace, args.idle, args.editor, args.ready)
                    for key, value in run.items():
                        figures.setdefault(name, {}).setdefault(key, []).append(value)
        finally:
            server.close()
            if args.against:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(root / "against")],
                               check=False)
    load = os.getloadavg()[0]
    for name, series in figures.items():
        cells = ", ".join(f"{key} {statistics.median(values) * 1000:.0f} ms"
                          f" [{min(values) * 1000:.0f}-{max(values) * 1000:.0f}]" for key, values in series.items())
        print(f"{name:<12} {'prompt' if args.ready else 'spawn'} -> first delta"
              f"{'' if args.ready else ' (and -> initialize answered)'}: {cells}")
    print(f"(medians [min-max] of {args.runs} runs; {os.cpu_count()} cores, load {load:.1f}; "
          f"{time.strftime('%Y-%m-%d %H:%M')})")
    print(json.dumps({name: {k: statistics.median(v) for k, v in s.items()} for name, s in figures.items()}))


if __name__ == "__main__":
    main()
