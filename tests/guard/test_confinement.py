"""Confinement of the file tools against a hostile workspace: symlinks on the way, hard
links to outside files, swaps racing the open, and the daemon's own ``.pi`` state."""

import asyncio
import ctypes
import errno
import os
import stat
import threading
import time

import pytest

from pi_daemon.cancel import CancelToken
from pi_daemon.guard import safe_open
from pi_daemon.tools.builtin import coding_tools
from pi_daemon.guard.safe_open import open_beneath, open_root
from pi_daemon.guard.workspace import READ, WRITE, PathRefused, Workspace

WAYS = [pytest.param(False, id="walk")] + ([pytest.param(True, id="openat2")] if safe_open.HAVE_OPENAT2 else [])


@pytest.fixture
def ws(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("OUTSIDE-SECRET\n")
    return Workspace(str(tmp_path / "project"))


@pytest.fixture
def tools(ws):
    return {t.name: t for t in coding_tools(ws)}


async def run(tool, args):
    async def on_update(partial):
        pass
    return await tool.execute("call", args, CancelToken(), on_update)


def text(result):
    return "".join(b.text for b in result.content if hasattr(b, "text"))


def outside(ws):
    return ws.root.parent / "outside"


# --- safe_open, both ways -----------------------------------------------------------------

@pytest.mark.parametrize("via", WAYS)
def test_open_beneath_opens_plain_paths_and_meets_no_symlink(tmp_path, via):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("here")
    (tmp_path / "la").symlink_to(tmp_path / "a")
    (tmp_path / "a" / "lf").symlink_to(tmp_path / "a" / "b" / "f")
    root = open_root(tmp_path)
    try:
        fd = open_beneath(root, ("a", "b", "f"), os.O_RDONLY, use_openat2=via)
        assert os.read(fd, 10) == b"here"
        os.close(fd)
        for parts in (("la", "b", "f"), ("a", "lf")):
            with pytest.raises(OSError) as refused:
                open_beneath(root, parts, os.O_RDONLY, use_openat2=via)
            assert refused.value.errno == errno.ELOOP
        for parts in (("a", "..", "a", "b", "f"), ("a", "", "b"), ("a/b", "f")):
            with pytest.raises(OSError) as bad:
                open_beneath(root, parts, os.O_RDONLY, use_openat2=via)
            assert bad.value.errno == errno.EINVAL
        fd = open_beneath(root, ("new", "deep", "g"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, make_parents=True,
                          use_openat2=via)
        os.close(fd)
        assert (tmp_path / "new" / "deep" / "g").is_file()
    finally:
        os.close(root)


@pytest.mark.parametrize("via", WAYS)
def test_open_beneath_never_escapes_while_a_folder_is_swapped(tmp_path, via):
    (tmp_path / "ws" / "d").mkdir(parents=True)
    (tmp_path / "ws" / "d" / "f").write_text("inside")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "f").write_text("OUTSIDE")
    (tmp_path / "ws" / "d.link").symlink_to(tmp_path / "out")
    stop = threading.Event()
    thread = threading.Thread(target=swap_loop, args=(tmp_path / "ws" / "d", tmp_path / "ws" / "d.link", stop))
    root = open_root(tmp_path / "ws")
    seen: set = set()
    thread.start()
    # Until both outcomes were seen (a busy host can schedule the swaps so that thousands of
    # opens in a row meet the link), at least 3,000 opens and for at most 20 seconds.
    deadline = time.monotonic() + 20
    try:
        tries = 0
        while tries < 3000 or not {b"inside", errno.ELOOP} <= seen:
            if time.monotonic() > deadline:
                break
            tries += 1
            try:
                fd = open_beneath(root, ("d", "f"), os.O_RDONLY, use_openat2=via)
            except OSError as exc:
                seen.add(exc.errno)
                continue
            seen.add(os.read(fd, 10))
            os.close(fd)
    finally:
        stop.set()
        thread.join()
        os.close(root)
    assert b"OUTSIDE" not in seen and b"inside" in seen and errno.ELOOP in seen


_libc = ctypes.CDLL(None, use_errno=True)


def swap_loop(a, b, stop):
    """Exchange two names atomically (renameat2 RENAME_EXCHANGE) until told to stop."""
    while not stop.is_set():
        assert _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0


# --- hard links -----------------------------------------------------------------------------

async def test_a_hard_link_to_an_outside_file_is_neither_read_nor_written(tools, ws):
    secret = outside(ws) / "secret.txt"
    os.link(secret, ws.root / "link.txt")
    for name, args in (("read", {"path": "link.txt"}), ("write", {"path": "link.txt", "content": ""}),
                       ("edit", {"path": "link.txt", "edits": [{"oldText": "OUTSIDE", "newText": "X"}]}),
                       ("grep", {"pattern": "SECRET", "path": "link.txt"})):
        result = await run(tools[name], args)
        assert result.is_error, name
        assert text(result).startswith("link.txt has 2 hard links; refusing since it may be a file outside the "
                                       "workspace"), (name, text(result))
    assert secret.read_text() == "OUTSIDE-SECRET\n"  # not even emptied before the check
    found = text(await run(tools["grep"], {"pattern": "SECRET"}))
    assert "OUTSIDE" not in found.replace("OUTSIDE-SECRET", "") and found.startswith("no matches")
    assert "1 file(s) left out" in found and "hard links" in found
    assert text(await run(tools["find"], {"pattern": "*.txt"})).split() == ["link.txt"]  # a name is no content


async def test_grep_keeps_only_lines_the_checked_file_confirms(tools, ws):
    (ws.root / "a.txt").write_text("one\nneedle here\nthree\n")
    os.link(outside(ws) / "secret.txt", ws.root / "b.txt")
    (ws.root / "c.txt").write_text("needle again\n")
    found = text(await run(tools["grep"], {"pattern": "needle|SECRET", "context": 1}))
    assert found.splitlines()[:5] == ["a.txt-1-one", "a.txt:2:needle here", "a.txt-3-three", "--",
                                      "c.txt:1:needle again"]
    assert "SECRET" not in found.split("\n[")[0]


async def test_a_hard_link_swapped_away_between_open_and_check_is_not_used(tools, ws):
    """The inside name of an outside file is replaced right after the open: the link count
    read then says 1, but the name no longer leads to the opened file."""
    secret, h = outside(ws) / "secret.txt", ws.root / "h.txt"
    h.write_text("inside\n")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            os.link(secret, ws.root / "tmp-link")
            os.rename(ws.root / "tmp-link", h)   # h is the outside file (2 links)
            (ws.root / "tmp-file").write_text("inside\n")
            os.rename(ws.root / "tmp-file", h)   # h is an inside file again; the outside one has 1 link

    def met_swap(results):
        return any(r.is_error and "h.txt" in text(r) for r in results)

    thread = threading.Thread(target=loop)
    reads: list = []
    writes: list = []
    thread.start()
    # Until a swap was met (a busy host may run the swapper seldom), at least 3,000 reads and
    # 1,000 writes, and for at most 30 seconds.
    deadline = time.monotonic() + 30
    try:
        while len(writes) < 1000 or not met_swap(reads + writes):
            if time.monotonic() > deadline:
                break
            reads += [await run(tools["read"], {"path": "h.txt"}) for _ in range(3)]
            writes.append(await run(tools["write"], {"path": "h.txt", "content": "inside\n"}))
    finally:
        stop.set()
        thread.join()
    assert not any("OUTSIDE" in text(r) for r in reads) and secret.read_text() == "OUTSIDE-SECRET\n"
    # the swaps were met and refused (not merely missed), and the tools work once they stop
    assert met_swap(reads + writes), (len(reads), len(writes))
    assert not (await run(tools["write"], {"path": "h.txt", "content": "calm\n"})).is_error
    assert text(await run(tools["read"], {"path": "h.txt"})).split() == ["1", "calm"]


# --- symlinks that stay inside, and swaps racing the tools ------------------------------------

async def test_symlinks_inside_the_roots_keep_working(tools, ws, tmp_path):
    (ws.root / "real").mkdir()
    (ws.root / "real" / "f.txt").write_text("real content\n")
    (ws.root / "alias").symlink_to("real")
    (ws.root / "f-link.txt").symlink_to("real/f.txt")
    assert "real content" in text(await run(tools["read"], {"path": "alias/f.txt"}))
    assert not (await run(tools["write"], {"path": "f-link.txt", "content": "via link\n"})).is_error
    assert (ws.root / "real" / "f.txt").read_text() == "via link\n" and (ws.root / "f-link.txt").is_symlink()
    assert not (await run(tools["write"], {"path": "alias/sub/new.txt", "content": "n"})).is_error
    assert (ws.root / "real" / "sub" / "new.txt").read_text() == "n"
    assert text(await run(tools["ls"], {"path": "alias"})).split() == ["f.txt", "sub/"]
    ws.allow([str(outside(ws))])
    (ws.root / "out-link").symlink_to(outside(ws))
    assert "OUTSIDE-SECRET" in text(await run(tools["read"], {"path": "out-link/secret.txt"}))


async def test_reads_and_writes_racing_a_swap_never_escape(tools, ws):
    (ws.root / "d").mkdir()
    (ws.root / "d" / "f.txt").write_text("inside\n")
    (outside(ws) / "f.txt").write_text("OUTSIDE-SECRET\n")
    (ws.root / "d.link").symlink_to(outside(ws))
    before = sorted(os.listdir(outside(ws)))
    stop = threading.Event()
    thread = threading.Thread(target=swap_loop, args=(ws.root / "d", ws.root / "d.link", stop))
    reads: list = []
    writes: list = []
    edits: list = []

    def met_both(results):
        return {bool(r.is_error) for r in results} == {True, False}

    thread.start()
    # Until a read and a write were each both served and refused mid-race (a busy host can schedule
    # the swaps so that hundreds of calls in a row meet the link), at least 1,000 reads, 300 writes
    # and 100 edits, and for at most 30 seconds.
    deadline = time.monotonic() + 30
    try:
        while len(edits) < 100 or not (met_both(reads) and met_both(writes)):
            if time.monotonic() > deadline:
                break
            reads += [await run(tools["read"], {"path": "d/f.txt"}) for _ in range(10)]
            writes += [await run(tools["write"], {"path": f"d/n{n % 10}.txt", "content": "w"}) for n in range(3)]
            edits.append(await run(tools["edit"], {"path": "d/f.txt",
                                                   "edits": [{"oldText": "inside", "newText": "inside"}]}))
    finally:
        stop.set()
        thread.join()
    assert not any("OUTSIDE" in text(r) for r in reads + writes + edits)
    # the race was met (some calls refused) and did not stop the tools (some served while it ran)
    assert met_both(reads) and met_both(writes), (len(reads), len(writes))
    assert sorted(os.listdir(outside(ws))) == before and (outside(ws) / "f.txt").read_text() == "OUTSIDE-SECRET\n"
    unchanged = "the edits change nothing"  # an edit that reached the inside file: it replaces a text by itself
    refused = [text(r) for r in reads + writes + edits if r.is_error and not text(r).startswith(unchanged)]
    assert [t for t in refused if not any(why in t for why in RACE_REFUSALS)] == []  # only the swap refuses
    # the same calls, the folder left alone, are served: what the race refused was the race's
    if (ws.root / "d").is_symlink():
        assert _libc.renameat2(-100, os.fsencode(ws.root / "d"), -100, os.fsencode(ws.root / "d.link"), 2) == 0
    for name, args in (("read", {"path": "d/f.txt"}), ("write", {"path": "d/n0.txt", "content": "w"})):
        result = await run(tools[name], args)
        assert not result.is_error, (name, text(result))
    edited = await run(tools["edit"], {"path": "d/f.txt", "edits": [{"oldText": "inside", "newText": "inside"}]})
    assert text(edited).startswith(unchanged)


RACE_REFUSALS = ("which is outside the workspace", "changed while it was being opened", "keeps changing while",
                 "keeps appearing and disappearing")


# --- the daemon's state folder ----------------------------------------------------------------

@pytest.mark.parametrize("path", [".pi/permissions.json", ".pi/settings.json", ".pi/models.json", ".pi/mcp.json",
                                  ".pi/sessions/a/b.jsonl", ".pi/trust.json", "./.pi/../.pi/x", ".PI/settings.json",
                                  "src/../.pi/new.json", ".pi", ".pi/tmp/out.txt"])
async def test_nothing_in_the_state_folder_is_written(tools, ws, path):
    (ws.root / ".pi" / "tmp").mkdir(parents=True)
    (ws.root / ".pi" / "permissions.json").write_text("{}")
    for name, args in (("write", {"path": path, "content": "{}"}),
                       ("edit", {"path": path, "edits": [{"oldText": "{}", "newText": "[]"}]})):
        result = await run(tools[name], args)
        assert result.is_error and "the daemon's own state" in text(result), (name, path, text(result))
    assert (ws.root / ".pi" / "permissions.json").read_text() == "{}"
    assert sorted(p.name for p in (ws.root / ".pi").rglob("*")) == ["permissions.json", "tmp"]


async def test_state_reached_by_symlink_or_a_symlinked_state_folder_is_refused(tools, ws):
    (ws.root / "state").mkdir()
    (ws.root / "state" / "permissions.json").write_text("{}")
    (ws.root / ".pi").symlink_to("state")
    (ws.root / "p.json").symlink_to(".pi/permissions.json")
    for path in ("p.json", "state/permissions.json", ".pi/permissions.json"):
        result = await run(tools["write"], {"path": path, "content": '{"allow": [{"tool": "bash"}]}'})
        assert result.is_error and "the daemon's own state" in text(result), path
    assert (ws.root / "state" / "permissions.json").read_text() == "{}"


async def test_of_the_state_folder_only_tmp_is_read(tools, ws):
    (ws.root / ".pi" / "tmp").mkdir(parents=True)
    (ws.root / ".pi" / "tmp" / "bash-1.log").write_text("long output\n")
    (ws.root / ".pi" / "sessions").mkdir()
    (ws.root / ".pi" / "sessions" / "s.jsonl").write_text('{"said": "private"}\n')
    (ws.root / ".pi" / "models.json").write_text('{"apiKey": "sk-literal"}')
    assert "long output" in text(await run(tools["read"], {"path": ".pi/tmp/bash-1.log"}))
    assert "long output" in text(await run(tools["grep"], {"pattern": "long", "path": ".pi/tmp"}))
    for name, args in (("read", {"path": ".pi/sessions/s.jsonl"}), ("read", {"path": ".pi/models.json"}),
                       ("grep", {"pattern": "private", "path": ".pi"}), ("find", {"pattern": "*", "path": ".pi"})):
        result = await run(tools[name], args)
        assert result.is_error and "only .pi/tmp/" in text(result), (name, text(result))
    assert text(await run(tools["ls"], {"path": ".pi"})).split() == ["models.json", "sessions/", "tmp/"]
    found = text(await run(tools["grep"], {"pattern": "private|sk-literal", "path": ".", "glob": "**"}))
    assert "private" not in found and "sk-literal" not in found


# --- odd files --------------------------------------------------------------------------------

async def test_a_fifo_or_device_is_refused_without_hanging(tools, ws):
    os.mkfifo(ws.root / "pipe")
    for name, args in (("read", {"path": "pipe"}), ("write", {"path": "pipe", "content": "x"})):
        result = await asyncio.wait_for(run(tools[name], args), 5)
        assert result.is_error, name
    assert "not a regular file" in text(await run(tools["read"], {"path": "pipe"}))
    assert "is a directory" in text(await run(tools["write"], {"path": ".", "content": "x"}))
    assert "does not exist" in text(await run(tools["read"], {"path": "missing.txt"}))
    (ws.root / "loop-a").symlink_to("loop-b")
    (ws.root / "loop-b").symlink_to("loop-a")
    assert "a loop" in text(await run(tools["read"], {"path": "loop-a/x"}))
    for name in ("grep", "find"):
        assert "'missing' does not exist" in text(await run(tools[name], {"pattern": "x", "path": "missing"}))
    (ws.root / "f.txt").write_text("x\n")
    assert "Not a directory" in text(await run(tools["grep"], {"pattern": "x", "path": "f.txt/y"}))


async def test_writes_keep_the_file_and_its_mode_and_edit_reads_line_ends_as_before(tools, ws):
    f = ws.root / "run.sh"
    f.write_text("#!/bin/sh\r\necho a\r\n")
    f.chmod(0o750)
    inode = f.stat().st_ino
    assert not (await run(tools["edit"], {"path": "run.sh", "edits": [{"oldText": "echo a", "newText": "echo b"}]})
                ).is_error
    assert f.read_bytes() == b"#!/bin/sh\necho b\n"
    assert not (await run(tools["write"], {"path": "run.sh", "content": "short"})).is_error
    assert f.read_text() == "short" and f.stat().st_ino == inode and stat.S_IMODE(f.stat().st_mode) == 0o750


def test_locate_names_the_root_and_parts(ws, tmp_path):
    ws.allow([str(outside(ws))])
    place = ws.locate(str(outside(ws) / "secret.txt"), READ)
    assert place.root == outside(ws).resolve() and place.parts == ("secret.txt",)
    assert ws.locate("a/b.txt", WRITE).parts == ("a", "b.txt")
    with pytest.raises(PathRefused, match="outside the workspace"):
        ws.locate("../x", READ)


def test_a_views_own_roots_widen_that_view_alone(tmp_path):
    root, extra = tmp_path / "ws", tmp_path / "extra"
    root.mkdir()
    extra.mkdir()
    (extra / "f.txt").write_text("x")
    base = Workspace(str(root))
    widened, other = base.at(str(root), [str(extra)]), base.at(str(root))
    assert widened.check(str(extra / "f.txt"), READ).path == (extra / "f.txt").resolve()
    for view in (base, other):
        with pytest.raises(PathRefused, match="outside the workspace"):
            view.check(str(extra / "f.txt"), READ)
    widened.set_session_roots([])  # replaced, as a resume with no folders does
    with pytest.raises(PathRefused):
        widened.check(str(extra / "f.txt"), READ)
    with pytest.raises(PathRefused, match="not a folder"):
        base.at(str(root), [str(extra / "f.txt")])
