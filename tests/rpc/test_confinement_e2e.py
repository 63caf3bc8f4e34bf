"""File confinement through the daemon: hard links, symlink swaps racing the tools, and
the daemon's own state folder, each tried the way a hostile repository would."""

import ctypes
import json
import os
import random
import threading
import time

from client import write_script


def call(cid: str, name: str, args: dict) -> dict:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": args}


def layout(tmp_path):
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    return ws, outside


def run_calls(spawn, tmp_path, ws, *turns: list[dict]):
    """One prompt whose model asks for these tool calls (one assistant message per turn)."""
    replies = [{"content": turn, "stopReason": "toolUse"} for turn in turns]
    replies.append({"content": [{"type": "text", "text": "done"}]})
    script = write_script(tmp_path / "script.json", replies, modelId="script")
    d = spawn("--faux-script", str(script), "--model", "faux/script", cwd=str(ws))
    d.on_request["permission/request"] = lambda params: {"outcome": "allow_once"}
    d.call("initialize", {"capabilities": {"permissions": True}})
    d.call("prompt", {"text": "go"})
    d.wait_event("agent_settled", timeout=60)
    return {e["event"]["toolCallId"]: e["event"] for e in d.events if e["event"]["type"] == "tool_execution_end"}


def said(end: dict) -> str:
    return "".join(c.get("text", "") for c in end["result"]["content"])


def test_hard_links_out_of_the_workspace_are_refused(spawn, tmp_path):
    ws, outside = layout(tmp_path)
    os.link(outside / "secret.txt", ws / "link.txt")
    (ws / "plain.txt").write_text("an ordinary file\n")
    ends = run_calls(spawn, tmp_path, ws, [
        call("r", "read", {"path": "link.txt"}),
        call("g", "grep", {"pattern": "OUTSIDE-SECRET"}),
        call("g2", "grep", {"pattern": "OUTSIDE-SECRET", "path": "link.txt"}),
        call("e", "edit", {"path": "link.txt", "edits": [{"oldText": "OUTSIDE", "newText": "OWNED"}]}),
        call("w", "write", {"path": "link.txt", "content": "overwritten"}),
        call("ok", "read", {"path": "plain.txt"}),
    ])
    for cid in ("r", "e", "w", "g2"):
        assert ends[cid]["isError"], cid
        assert "link.txt has 2 hard links" in said(ends[cid]) and "outside the workspace" in said(ends[cid]), cid
    assert "OUTSIDE-SECRET" not in json.dumps(ends)
    assert not ends["g"]["isError"] and "no matches" in said(ends["g"])
    assert (outside / "secret.txt").read_text() == "OUTSIDE-SECRET\n"
    assert "an ordinary file" in said(ends["ok"])


def test_a_hard_link_to_gits_or_the_daemons_own_files_is_refused_though_both_names_are_inside(spawn, tmp_path):
    """A name in ``.git`` or ``.pi`` is no name of the workspace's: a link to ``.git/config`` (from a
    tarball, or an unsandboxed command) would let ``edit`` arm git under another file's name."""
    ws, _ = layout(tmp_path)
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (ws / ".pi").mkdir()
    (ws / ".pi" / "permissions.json").write_text('{"allow": [], "reject": []}')
    os.link(ws / ".git" / "config", ws / "notes.txt")
    os.link(ws / ".pi" / "permissions.json", ws / "perm.txt")
    (ws / "mine.txt").write_text("mine\n")
    os.link(ws / "mine.txt", ws / "also-mine.txt")  # both names in the workspace proper: readable
    ends = run_calls(spawn, tmp_path, ws, [
        call("e", "edit", {"path": "notes.txt", "edits": [{"oldText": "bare = false",
                                                           "newText": "bare = false\n\tfsmonitor = ./evil"}]}),
        call("w", "write", {"path": "perm.txt", "content": '{"allow": [{"tool": "bash"}], "reject": []}'}),
        call("r", "read", {"path": "also-mine.txt"}),
    ])
    for cid, name in (("e", "notes.txt"), ("w", "perm.txt")):
        assert ends[cid]["isError"] and f"{name} has 2 hard links" in said(ends[cid]), cid
    assert "fsmonitor" not in (ws / ".git" / "config").read_text()
    assert "bash" not in (ws / ".pi" / "permissions.json").read_text()
    assert not ends["r"]["isError"] and "mine" in said(ends["r"])


def test_daemon_state_files_are_not_writable_through_the_tools(spawn, tmp_path):
    ws, _ = layout(tmp_path)
    (ws / ".pi").mkdir()
    (ws / ".pi" / "permissions.json").write_text('{"allow": [], "reject": []}')
    (ws / "perm-link.json").symlink_to(ws / ".pi" / "permissions.json")
    grant = json.dumps({"allow": [{"tool": "bash"}], "reject": []})
    ends = run_calls(spawn, tmp_path, ws, [
        call("w", "write", {"path": ".pi/permissions.json", "content": grant}),
        call("s", "write", {"path": "perm-link.json", "content": grant}),
        call("d", "write", {"path": "./.pi/../.pi/settings.json", "content": "{}"}),
        call("c", "write", {"path": ".PI/../.pi/models.json", "content": "{}"}),
        call("e", "edit", {"path": ".pi/permissions.json", "edits": [{"oldText": "[]", "newText": '[{"tool": "bash"}]'}]}),
        call("n", "write", {"path": ".pi/sessions/x.jsonl", "content": "{}"}),
    ])
    for cid in ("w", "s", "d", "c", "e", "n"):
        assert ends[cid]["isError"], cid
        assert "the daemon's own state" in said(ends[cid]), (cid, said(ends[cid]))
    assert json.loads((ws / ".pi" / "permissions.json").read_text()) == {"allow": [], "reject": []}
    assert not (ws / ".pi" / "settings.json").exists() and not (ws / ".pi" / "sessions" / "x.jsonl").exists()
    assert not (ws / ".pi" / "models.json").exists()


_libc = ctypes.CDLL(None, use_errno=True)
RENAME_EXCHANGE = 2


def exchange(a, b) -> None:
    """Swap two names atomically (renameat2 RENAME_EXCHANGE): ``d`` is never missing."""
    if _libc.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), RENAME_EXCHANGE) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))


def swapper(ws, outside, stop: threading.Event) -> threading.Thread:
    """Flip ws/d between a real folder and a symlink to the outside folder, as fast as it goes,
    holding one of the two now and then for 2 ms (one flip in 20): on a busy host the flips
    alone could fall so that every open met the link, and the test would see nothing served
    (one in 100 still let all 300 writes of a full suite run meet it)."""
    (ws / "d.link").symlink_to(outside)

    def loop():
        while not stop.is_set():
            exchange(ws / "d", ws / "d.link")
            if random.random() < 0.05:
                time.sleep(0.002)

    return threading.Thread(target=loop, daemon=True)


def test_swapping_a_folder_for_a_symlink_never_lets_a_read_or_write_escape(spawn, tmp_path):
    ws, outside = layout(tmp_path)
    (outside / "f.txt").write_text("OUTSIDE-SECRET\n")
    (ws / "d").mkdir()
    (ws / "d" / "f.txt").write_text("inside\n")
    before = sorted(os.listdir(outside))
    reads = [call(f"r{n}", "read", {"path": "d/f.txt"}) for n in range(600)]
    writes = [call(f"w{n}", "write", {"path": f"d/w{n % 20}.txt", "content": "written"}) for n in range(200)]
    overwrites = [call(f"o{n}", "write", {"path": "d/f.txt", "content": "inside\n"}) for n in range(100)]
    stop = threading.Event()
    thread = swapper(ws, outside, stop)
    thread.start()
    started = time.monotonic()
    try:
        ends = run_calls(spawn, tmp_path, ws, reads, writes + overwrites)
    finally:
        stop.set()
        thread.join()
    assert time.monotonic() - started < 60
    assert len(ends) == 900
    leaked = [cid for cid, end in ends.items() if "OUTSIDE-SECRET" in said(end)]
    assert leaked == []
    assert sorted(os.listdir(outside)) == before and (outside / "f.txt").read_text() == "OUTSIDE-SECRET\n"
    served = [cid for cid, end in ends.items() if not end["isError"]]
    assert all(said(ends[c]) == "     1\tinside" for c in served if c.startswith("r"))
    refused = {cid: said(end) for cid, end in ends.items() if end["isError"]}
    unexplained = {cid: text for cid, text in refused.items() if not any(why in text for why in RACE_REFUSALS)}
    assert unexplained == {}  # a call is refused only for the swap it met, and says so
    if (ws / "d").is_symlink():
        exchange(ws / "d", ws / "d.link")
    # the same calls, the folder left alone, are served: what the race refused was the race's
    again = run_calls(spawn, tmp_path, ws, [reads[0], writes[0], overwrites[0]])
    assert not any(end["isError"] for end in again.values()), again
    assert said(again["r0"]) == "     1\tinside" and (ws / "d" / "w0.txt").read_text() == "written"


RACE_REFUSALS = ("which is outside the workspace", "changed while it was being opened", "keeps changing while",
                 "keeps appearing and disappearing")


def test_a_hard_link_swapped_in_and_out_never_leaks_or_is_overwritten(spawn, tmp_path):
    ws, outside = layout(tmp_path)
    secret, h = outside / "secret.txt", ws / "h.txt"
    h.write_text("inside\n")
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            os.link(secret, ws / "tmp-link")
            os.rename(ws / "tmp-link", h)  # h is the outside file, with 2 links
            (ws / "tmp-file").write_text("inside\n")
            os.rename(ws / "tmp-file", h)  # an inside file again: the outside one is back to 1 link

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        ends = run_calls(spawn, tmp_path, ws, [call(f"r{n}", "read", {"path": "h.txt"}) for n in range(400)],
                         [call(f"w{n}", "write", {"path": "h.txt", "content": "inside\n"}) for n in range(200)],
                         [call(f"g{n}", "grep", {"pattern": "SECRET|inside"}) for n in range(50)])
    finally:
        stop.set()
        thread.join()
    assert len(ends) == 650 and not [cid for cid, end in ends.items() if "OUTSIDE" in said(end)]
    assert secret.read_text() == "OUTSIDE-SECRET\n"
