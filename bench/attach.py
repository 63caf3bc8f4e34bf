"""``pi-daemon attach`` to a running server: the bridge's start to ``initialize`` answered.

Beside it, in the same run, the plain daemon (``pi-daemon``, one process per client): its spawn
to ``initialize`` answered. Both through the installed ``pi-daemon`` script, in a private
runtime folder, the server stopped at the end. A third figure is ``attach`` started with
``python -S`` (no ``site``: what it costs without an editable install's import hook, which a
development checkout's ``site`` runs at every start).

Run: .venv/bin/python bench/attach.py [--runs 21]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import precompile

PI_DAEMON = str(Path(sys.executable).parent / "pi-daemon")
INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\n'


CPU_MS: list[float] = []  # the spawned process's own CPU time (user + system), per run


def initialize_ms(command: list[str], env: dict[str, str], cwd: str) -> float:
    """Spawn ``command``, send initialize, wait for its answer: milliseconds (its CPU time to CPU_MS)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = (time.perf_counter() - started) * 1000
    assert b'"id":1' in line and b'"result"' in line, line
    proc.stdin.close()
    proc.wait(30)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU_MS.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    precompile()
    workspace = tempfile.mkdtemp(prefix="pi-bench-attach-")
    runtime = tempfile.mkdtemp(prefix="pirt-")
    env = {**os.environ, "XDG_RUNTIME_DIR": runtime, "PI_DAEMON_HOME": tempfile.mkdtemp(prefix="pih-")}
    attach = [PI_DAEMON, "attach", "--workspace", workspace, "--model", "faux/echo"]
    plain = [PI_DAEMON, "--workspace", workspace, "--model", "faux/echo"]
    root = str(Path(__file__).resolve().parents[1])
    bare = [sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {root!r}); from pi_daemon.cli import main; "
            "main()", *attach[1:]]
    initialize_ms(attach, env, workspace)  # starts the server
    info = next(Path(runtime, "pi-daemon").glob("*.json"))
    try:
        attached: list[float] = []
        spawned: list[float] = []
        without_site: list[float] = []
        attach_cpu: list[float] = []
        for _ in range(runs):
            attached.append(initialize_ms(attach, env, workspace))
            attach_cpu.append(CPU_MS[-1])
            spawned.append(initialize_ms(plain, env, workspace))
            without_site.append(initialize_ms(bare, env, workspace))
    finally:
        os.kill(json.loads(info.read_text())["pid"], signal.SIGTERM)
    print(f"attach to a running server -> initialize answered: median {statistics.median(attached):.1f} ms "
          f"(min {min(attached):.1f}, {runs} runs; goal <= 20 ms)")
    print(f"  attach's own CPU time (user + system): median {statistics.median(attach_cpu):.1f} ms "
          "(less sensitive to a loaded machine than the wall time)")
    print(f"plain pi-daemon spawn -> initialize answered:      median {statistics.median(spawned):.1f} ms "
          f"(min {min(spawned):.1f}, {runs} runs)")
    print(f"attach under python -S -> initialize answered:      median {statistics.median(without_site):.1f} ms "
          f"(min {min(without_site):.1f}, {runs} runs)")


if __name__ == "__main__":
    main()
