"""The package's import graph: no circle, imports only downward, no library's private names.

Layers, top to bottom: the entry points (``cli``, ``ask``, ``client``, and ``server``: serve, attach, ps) → the two faces (``rpc``
native, ``acp``) → ``host`` → ``session`` → ``agent`` → ``llm``, ``tools``, ``mcp``,
``commands`` → ``worktree`` (the record of a run's changes) → ``guard`` (the door: trust, the
workspace boundary, programs, permissions, the sandbox) → the leaves (messages, events, converters, configuration files). ``wire`` is
the one JSON-RPC wire both faces speak through: it imports nothing of the daemon but its
own modules and ``json_read``; the host uses only its error vocabulary (``wire.errors``).
Every import counts, a function's own included; only ``if TYPE_CHECKING:`` blocks do not.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pi_daemon"

ENTRY = ("cli", "ask", "ask_codes", "client", "__main__", "server")
FACES = ("rpc", "acp")
LOWER = ("session", "agent", "llm", "tools", "mcp", "commands", "worktree", "guard")
LEAVES = ("messages", "events", "converter", "json_read", "json_types", "cancel", "home", "config_file",
          "settings", "procs", "schema_fits")


def modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        package = parts[-1] == "__init__"
        if package:
            parts = parts[:-1]
        found[".".join(parts)] = (path, package)
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for child in ast.walk(node))
    return skipped


def imports(name: str, path: Path, package: bool) -> list[tuple[str, int]]:
    """Every module ``name`` imports (absolute names) with the line, TYPE_CHECKING blocks left out."""
    tree = ast.parse(path.read_text())
    skipped = _type_checking_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if package else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
            found.append((module, node.lineno))
    return found


def graph() -> dict[str, dict[str, int]]:
    known = modules()
    edges: dict[str, dict[str, int]] = {name: {} for name in known}
    for name, (path, package) in known.items():
        for target, line in imports(name, path, package):
            while target and target not in known:  # a name imported from a module: the module
                target = target.rpartition(".")[0]
            if target and target != name and target != "pi_daemon":
                edges[name].setdefault(target, line)
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_module_imports_another_that_imports_it_back():
    edges = graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            circle = []
            while True:
                member = stack.pop()
                circle.append(member)
                if member == node:
                    break
            if len(circle) > 1:
                circles.append(sorted(circle))

    for node in edges:
        if node not in index:
            visit(node)
    assert not circles, "import circles (each a set of modules that import each other):\n" + "\n".join(
        " <-> ".join(c) for c in circles)


def _forbidden(importer: str, target: str) -> str | None:
    """The rule ``importer`` breaks by importing ``target``, or None."""
    src, dst = layer(importer), layer(target)
    if src == dst:
        return None
    if dst in ENTRY and src not in ENTRY:
        return "only an entry point imports an entry point"
    if dst in FACES and src not in ENTRY:
        return "nothing below the faces imports a face; a face imports no other face"
    if dst == "host" and src not in ENTRY + FACES:
        return "nothing below the host imports it"
    if src == "wire" and dst != "json_read":
        return "the wire imports nothing of the daemon but json_read"
    if dst == "wire" and src not in ENTRY + FACES and target != "pi_daemon.wire.errors":
        return "below the faces, only the error vocabulary of the wire (wire.errors) is used"
    if dst == "wire" and src not in ENTRY + FACES + ("host",):
        return "below the host nothing speaks the protocol's errors"
    if src == "session" and dst in ("host",) + FACES:
        return "the session layer imports nothing above it"
    if src == "agent" and dst in ("session", "host") + FACES:
        return "the agent imports nothing above it (session, host, faces)"
    if src in ("llm", "tools", "mcp", "commands") and dst in ("agent", "session", "host") + FACES:
        return "llm, tools, mcp and commands import nothing above them (agent, session, host, faces)"
    if src == "worktree" and dst not in LEAVES + ("guard",):
        return "the change record imports only the guard and the leaves"
    if src == "guard" and dst not in LEAVES and target != "pi_daemon.mcp.names":
        return "the guard imports only the leaves (and how MCP tools are named)"
    if src in LEAVES and dst in ("worktree", "tools", "llm", "mcp", "commands"):
        return "a leaf imports nothing above the guard"
    if src in ("messages", "events", "converter", "json_read", "json_types", "cancel", "home") \
            and dst not in ("messages", "events", "converter", "json_read", "json_types", "cancel"):
        return "a leaf module imports only other leaves"
    return None


def test_imports_go_only_downward():
    broken = []
    for importer, targets in graph().items():
        for target, line in targets.items():
            rule = _forbidden(importer, target)
            if rule:
                broken.append(f"{importer}:{line} imports {target}: {rule}")
    assert not broken, "\n".join(broken)


def test_the_layers_named_here_are_the_package_s():
    """A new top-level module or package must be placed in a layer above."""
    names = {layer(m) for m in modules()} - {""}
    assert names <= set(ENTRY + FACES + LOWER + LEAVES + ("host", "wire")), sorted(names)


_PRIVATE_STRING = re.compile(r"^([a-z][a-z0-9_]*)\._[a-z]")


def test_no_private_name_of_another_library_is_used():
    """No ``_private`` module or attribute of a third-party library: not imported, not reached
    as an attribute of an imported module, not named in a string (``sys.modules["x._y"]``).
    (The standard library's documented underscore names, such as ``os._exit``, are its API.)"""
    used = []
    libraries = {"attr", "attrs", "cattrs", "httpx", "httpx_sse", "httpcore", "h11", "lsprotocol", "orjson",
                 "jsonschema", "mcp", "bashlex", "anyio", "certifi"}  # the package's dependencies
    for name, (path, package) in modules().items():
        tree = ast.parse(path.read_text())
        third_party: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] not in ("pi_daemon", *sys.stdlib_module_names):
                        third_party.add((alias.asname or alias.name).split(".")[0])
                        if any(p.startswith("_") and not p.startswith("__") for p in alias.name.split(".")):
                            used.append(f"{name}:{node.lineno} imports {alias.name}")
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                parts = node.module.split(".")
                if parts[0] in ("pi_daemon", *sys.stdlib_module_names):
                    continue
                private = [p for p in parts if p.startswith("_") and not p.startswith("__")]
                private += [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                if private:
                    used.append(f"{name}:{node.lineno} imports {', '.join(private)} from {node.module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in third_party and node.attr.startswith("_") and not node.attr.startswith("__"):
                used.append(f"{name}:{node.lineno} uses {node.value.id}.{node.attr}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = _PRIVATE_STRING.match(node.value)
                if match and match.group(1) in libraries:
                    used.append(f"{name}:{node.lineno} names {node.value!r}")
        libraries.update(third_party)
    assert not used, "\n".join(used)


# --- what a start imports (issue #42): each face's handlers on their first call ---------------

def test_the_method_table_names_the_module_of_every_handler():
    """The table the connection imports handlers by (name -> module) is the declarations' own."""
    from pi_daemon.rpc.methods import HANDLER_MODULES, load_all
    from pi_daemon.rpc.registry import METHODS

    load_all()
    declared = {name: spec.handler.__module__ for name, spec in METHODS.items() if spec.handler is not None}
    assert HANDLER_MODULES == {name: module for name, module in declared.items() if not name.startswith("test/")}


def _stderr_of_a_daemon(tmp_path: Path, args: list[str], frames: list[dict]) -> list[str]:
    """The stderr of a real daemon run with ``-X importtime`` (a line for each module, in the order
    their imports ended, among the log's lines) while it answered ``frames`` one by one (each
    answer read before the next is sent) and then met the end of its input."""
    import json
    import subprocess

    from client import clean_env

    command = [sys.executable, "-X", "importtime", "-P", "-m", "pi_daemon", *args]
    proc = subprocess.Popen(command, cwd=tmp_path, env=clean_env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    for frame in frames:
        proc.stdin.write(json.dumps(frame).encode() + b"\n")
        proc.stdin.flush()
        while True:  # the answer (notifications the daemon sends meanwhile are passed over)
            line = proc.stdout.readline()
            assert line, "the daemon ended before it answered"
            if json.loads(line).get("id") == frame["id"]:
                break
    _, err = proc.communicate(timeout=120)
    return err.decode().splitlines()


def _modules(lines: list[str]) -> list[str]:
    return [line.rpartition("|")[2].strip() for line in lines
            if line.startswith("import time:") and not line.rstrip().endswith("package")]


HOST_LAYERS = ("pi_daemon.host", "pi_daemon.session", "pi_daemon.agent", "pi_daemon.tools", "pi_daemon.mcp.manager",
               "pi_daemon.commands", "pi_daemon.worktree", "pi_daemon.rpc.types")


def test_the_native_face_answers_initialize_before_importing_the_host_or_another_handler(tmp_path):
    """``initialize`` is served with ``lifecycle`` the only handler module loaded and nothing of the
    host's layers; the host is opened once it is answered, and no other handler module is imported
    until its method is called. Nothing of the ACP face is ever imported."""
    imported = _modules(_stderr_of_a_daemon(tmp_path, ["--model", "faux/echo"],
                                            [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                              "params": {"protocolVersion": 1}}]))
    handlers = [m for m in imported if m.startswith("pi_daemon.rpc.methods.")]
    assert handlers == ["pi_daemon.rpc.methods.lifecycle"]
    before = imported[:imported.index("pi_daemon.rpc.methods.lifecycle")]
    assert [m for m in before if m.startswith(HOST_LAYERS)] == []
    assert "pi_daemon.host.host" in imported  # opened once initialize was answered
    assert [m for m in imported if m.startswith("pi_daemon.acp")] == []


def test_the_acp_face_answers_initialize_before_making_its_agent_and_never_loads_the_native_face(tmp_path):
    """``--acp``: ``initialize`` is answered with the wire and the models loaded; the agent, the host
    and the session layer are imported once it is answered. No module of the native face is imported."""
    lines = _stderr_of_a_daemon(tmp_path, ["--acp", "--model", "faux/echo", "--workspace", ".", "--log-level", "debug"],
                                [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
                                 {"jsonrpc": "2.0", "id": 2, "method": "session/new",
                                  "params": {"cwd": str(tmp_path), "mcpServers": []}}])
    answered = next(i for i, line in enumerate(lines) if "initialize answered" in line)
    assert [m for m in _modules(lines[:answered]) if m.startswith(HOST_LAYERS + ("pi_daemon.acp.agent",))] == []
    assert "pi_daemon.acp.agent" in _modules(lines[answered:])
    assert [m for m in _modules(lines) if m.startswith("pi_daemon.rpc")] == []


def test_the_acp_method_table_names_the_agent_s_methods_and_every_extension():
    from pi_daemon.acp.agent import AcpAgent
    from pi_daemon.acp.extensions import methods
    from pi_daemon.acp.server import AGENT_METHODS, EXTENSION_METHODS

    assert [name for name, method in AGENT_METHODS.items() if not callable(getattr(AcpAgent, method, None))] == []
    assert set(EXTENSION_METHODS) == set(methods(None))  # type: ignore[arg-type] (its names only)
