"""docs/security.md names only tests that exist, and every row of its tables names one.

A reference is ``path::name`` (or ``path::Class::name``); ``name`` may carry a parametrized
id after ``[``. It must be a test function of that file, or a method of a class in it. An editor
client's own test is named by its file and the start of its title: `` `editor-clients/…/x.test.mjs` "title" ``
(a ``test("title…"`` of that file).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "security.md"
REFERENCE = re.compile(r"(tests/[\w/.-]+\.py)((?:::\w+)+)(\[[^\]`]*\])?")
CLIENT_REFERENCE = re.compile(r"`(editor-clients/[\w/.-]+\.(?:mjs|lua))` \"([^\"]+)\"")


def _tests_in(path: Path) -> set[tuple[str, ...]]:
    """Every test function of the file, as (name,) and, for a method, also (class, name)."""
    found: set[tuple[str, ...]] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add((node.name,))
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found |= {(item.name,), (node.name, item.name)}
    return {names for names in found if names[-1].startswith("test")}


def _table_rows(text: str) -> list[tuple[str, str]]:
    """(the row, its test cell) for every body row of every table that has a ``test`` column."""
    rows: list[tuple[str, str]] = []
    column: int | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            column = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if column is None:
            column = cells.index("test") if "test" in cells else -1
        elif column >= 0 and not set(line) <= set("|-: "):
            rows.append((line, cells[column] if column < len(cells) else ""))
    return rows


def test_every_test_the_doc_names_exists():
    text = DOC.read_text(encoding="utf-8")
    named = REFERENCE.findall(text)
    assert named, "docs/security.md names no test"
    missing = []
    cache: dict[str, set[tuple[str, ...]]] = {}
    for path, names, _ in named:
        file = ROOT / path
        if not file.is_file():
            missing.append(f"{path}: no such file")
            continue
        tests = cache.setdefault(path, _tests_in(file))
        if tuple(names.split("::")[1:]) not in tests:
            missing.append(f"{path}{names}: no such test")
    assert missing == []


def test_every_client_test_the_doc_names_exists():
    missing = []
    for path, title in CLIENT_REFERENCE.findall(DOC.read_text(encoding="utf-8")):
        file = ROOT / path
        # a Lua/node test("…"), or an e2e flow's run("…") / run(`${mode}: …`)
        titled = re.compile(r'(?:test|run)\((?:"|`(?:\$\{\w+\}: )?)' + re.escape(title))
        if not file.is_file() or not titled.search(file.read_text(encoding="utf-8")):
            missing.append(f"{path}: no test titled {title!r}…")
    assert missing == []


def test_every_row_names_a_test():
    rows = _table_rows(DOC.read_text(encoding="utf-8"))
    assert rows, "docs/security.md has no table with a test column"
    untested = [row for row, cell in rows if not (REFERENCE.search(cell) or CLIENT_REFERENCE.search(cell))]
    assert untested == []


def test_references_are_read_as_meant():
    """The checks above would pass vacuously if the patterns matched nothing or too much."""
    assert REFERENCE.findall("`tests/rpc/test_x.py::test_a[b-1]`, `tests/t.py::C::test_m`") == [
        ("tests/rpc/test_x.py", "::test_a", "[b-1]"), ("tests/t.py", "::C::test_m", "")]
    table = "| input | test |\n|---|---|\n| a | `tests/a.py::test_a` |\n| b | to come |\n| c | none yet |\n\nx"
    assert [cell for _, cell in _table_rows(table)] == ["`tests/a.py::test_a`", "to come", "none yet"]
    assert CLIENT_REFERENCE.findall('`editor-clients/vscode/test/a.test.mjs` "opens it" (and more)') == [
        ("editor-clients/vscode/test/a.test.mjs", "opens it")]
