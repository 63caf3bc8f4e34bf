"""The built-in tools on a real workspace folder: results a model can act on."""

import asyncio
import base64
import os
import subprocess
import time

import pytest

from helpers import await_until
from pi_daemon.cancel import CancelToken
from pi_daemon.messages import ImageContent
from pi_daemon.tools.builtin import coding_tools
from pi_daemon.guard.workspace import PathRefused, Workspace

PNG = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    return Workspace(str(root))


@pytest.fixture
def tools(ws):
    return {t.name: t for t in coding_tools(ws)}


async def run(tool, args, cancel=None, updates=None):
    async def on_update(partial):
        if updates is not None:
            updates.append(partial)
    return await tool.execute("call", args, cancel or CancelToken(), on_update)


def text(result):
    return "".join(b.text for b in result.content if hasattr(b, "text"))


async def test_write_creates_folders_and_read_pages_with_a_notice(tools, ws):
    body = "\n".join(f"line {n}" for n in range(1, 3001))
    result = await run(tools["write"], {"path": "deep/er/notes.txt", "content": body})
    assert not result.is_error and "Created deep/er/notes.txt" in text(result)
    page = text(await run(tools["read"], {"path": "deep/er/notes.txt"}))
    assert page.splitlines()[0].strip() == "1\tline 1" and "line 2000" in page and "line 2001" not in page
    assert "[Showing lines 1-2000 of 3000. Use offset=2001 to read on.]" in page
    rest = text(await run(tools["read"], {"path": "deep/er/notes.txt", "offset": 2001, "limit": 5}))
    assert "2001\tline 2001" in rest and "offset=2006" in rest
    wide = "x" * 30_000
    (ws.root / "wide.txt").write_text(f"{wide}\n{wide}\n{wide}\n")
    assert "Use offset=2 to read on" in text(await run(tools["read"], {"path": "wide.txt"}))  # 50 KB cap


async def test_read_images_and_refuses_binaries(tools, ws):
    (ws.root / "dot.png").write_bytes(PNG)
    result = await run(tools["read"], {"path": "dot.png"})
    image = [b for b in result.content if isinstance(b, ImageContent)][0]
    assert image.mime_type == "image/png" and base64.b64decode(image.data) == PNG
    (ws.root / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    result = await run(tools["read"], {"path": "blob.bin"})
    assert result.is_error and "binary file" in text(result)
    result = await run(tools["read"], {"path": "missing.txt"})
    assert result.is_error and "does not exist" in text(result)


async def test_edit_exact_fuzzy_overlap_not_found_several_and_no_change(tools, ws):
    (ws.root / "a.py").write_text('def greet():\n    print("hello")\n\n\ndef part():\n    return 1\n')
    result = await run(tools["edit"], {"path": "a.py", "edits": [
        {"oldText": 'print("hello")', "newText": 'print("hi")'}, {"oldText": "return 1", "newText": "return 2"}]})
    assert not result.is_error and result.details["diff"].startswith("--- a/a.py")
    assert '+    print("hi")' in result.details["diff"]
    assert (ws.root / "a.py").read_text().count("return 2") == 1
    fuzzy = await run(tools["edit"], {"path": "a.py", "edits": [
        {"oldText": "def greet():\n  print(“hi”)", "newText": "def greet():\n    print('hey')"}]})
    assert not fuzzy.is_error and "print('hey')" in (ws.root / "a.py").read_text()
    cases = [
        ([{"oldText": "nowhere", "newText": "x"}], "was not found"),
        ([{"oldText": "def", "newText": "fn"}], "matches 2 places"),
        ([{"oldText": "def greet", "newText": "x"}, {"oldText": "greet():", "newText": "y"}], "overlap"),
        ([{"oldText": "return 2", "newText": "return 2"}], "change nothing"),
    ]
    before = (ws.root / "a.py").read_text()
    for edits, needle in cases:
        result = await run(tools["edit"], {"path": "a.py", "edits": edits})
        assert result.is_error and needle in text(result), needle
    assert (ws.root / "a.py").read_text() == before  # a failed edit changes nothing


async def test_parallel_writes_to_one_file_are_serialised(tools, ws):
    path = ws.root / "same.txt"
    path.write_text("0\n")
    edits = [run(tools["edit"], {"path": "same.txt", "edits": [{"oldText": "0\n", "newText": "0\n" + f"{n}\n"}]})
             for n in range(1, 6)]
    results = await asyncio.gather(*edits)
    assert all(not r.is_error for r in results)
    assert sorted(path.read_text().split()) == ["0", "1", "2", "3", "4", "5"]


async def test_bash_streams_truncates_and_reports_exit_codes(tools, ws):
    updates = []
    result = await run(tools["bash"], {"command": "for i in $(seq 1 5); do echo tick $i; sleep 0.05; done"},
                       updates=updates)
    assert not result.is_error and "tick 5" in text(result) and len(updates) >= 2
    result = await run(tools["bash"], {"command": "seq 1 5000"})
    assert "full output is in" in text(result) and text(result).rstrip().endswith("5000")
    assert open(result.details["fullOutputPath"]).read().startswith("1\n2\n")
    result = await run(tools["bash"], {"command": "echo oops >&2; exit 3"})
    assert result.is_error and "oops" in text(result) and "[exit code 3]" in text(result)
    result = await run(tools["bash"], {"command": "cat"})  # stdin is closed: no hang
    assert not result.is_error
    assert (await run(tools["bash"], {"command": "pwd"})).content[0].text.strip() == str(ws.root)


def alive(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    return [pid for pid in out if int(pid) != os.getpid()]


async def test_bash_timeout_and_abort_kill_the_whole_group(tools):
    marker = f"sleep 987{os.getpid() % 100}"
    started = time.monotonic()
    result = await run(tools["bash"], {"command": f"({marker} &); {marker}", "timeout": 0.5})
    assert result.is_error and "timed out" in text(result)
    assert time.monotonic() - started < 30  # not the sleep's 987x seconds
    await await_until(lambda: alive(marker) == [], "the timed-out command's group to be gone")
    cancel = CancelToken()
    asyncio.get_running_loop().call_later(0.3, cancel.cancel)
    result = await run(tools["bash"], {"command": f"{marker} & {marker} & wait"}, cancel=cancel)
    assert result.is_error and "aborted" in text(result)
    await await_until(lambda: alive(marker) == [], "the aborted command's group to be gone")


async def test_grep_find_ls_respect_gitignore(tools, ws):
    (ws.root / ".gitignore").write_text("build/\n")
    (ws.root / "src").mkdir()
    (ws.root / "src" / "app.py").write_text("import os\nTOKEN = 'needle'\n")
    (ws.root / "src" / "util.ts").write_text("export const needle = 1\n")
    (ws.root / "build").mkdir()
    (ws.root / "build" / "out.py").write_text("needle = 'ignored'\n")
    found = text(await run(tools["grep"], {"pattern": "needle"}))
    assert "src/app.py:2:TOKEN = 'needle'" in found and "src/util.ts:1:" in found and "build" not in found
    assert "util.ts" not in text(await run(tools["grep"], {"pattern": "NEEDLE", "ignoreCase": True, "glob": "*.py"}))
    assert text(await run(tools["grep"], {"pattern": "a.b(", "literal": True})) == "no matches"
    assert "regex" in text(await run(tools["grep"], {"pattern": "a.b("})).lower()  # a clear error
    assert text(await run(tools["find"], {"pattern": "*.py"})).split() == ["src/app.py"]
    listing = text(await run(tools["ls"], {}))
    assert listing.split() == [".gitignore", "build/", "src/"]
    assert "is a file" in text(await run(tools["ls"], {"path": "src/app.py"}))


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "src/../../outside.txt", "~/.bashrc"])
async def test_paths_outside_the_workspace_are_refused(tools, ws, path):
    for name, args in (("read", {"path": path}), ("write", {"path": path, "content": "x"}), ("ls", {"path": path}),
                       ("grep", {"pattern": "x", "path": path})):
        result = await run(tools[name], args)
        assert result.is_error and "outside the workspace" in text(result), (name, path)
    assert not (ws.root.parent / "outside.txt").exists()


async def test_symlinks_out_are_refused_and_odd_names_work(tools, ws, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    (ws.root / "link.txt").symlink_to(secret)
    (ws.root / "linkdir").symlink_to(tmp_path)
    assert "outside the workspace" in text(await run(tools["read"], {"path": "link.txt"}))
    assert "outside the workspace" in text(await run(tools["write"], {"path": "linkdir/new.txt", "content": "x"}))
    for name in ("with space.txt", "ünïcødé.md", "-rf", "--help"):
        assert not (await run(tools["write"], {"path": name, "content": f"content of {name}"})).is_error
        assert f"content of {name}" in text(await run(tools["read"], {"path": name}))
    assert "-rf:1:content of -rf" in text(await run(tools["grep"], {"pattern": "content of -rf"}))
    allowed = Workspace(str(ws.root), extra_roots=[str(tmp_path)])
    assert allowed.resolve("link.txt") == secret.resolve()
    with pytest.raises(PathRefused):
        Workspace(str(ws.root)).resolve("bad\x00name")
